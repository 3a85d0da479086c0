/*
** wide.h -- loops over doubles built twice (internal): for the baseline
** x86-64 the engine targets and for AVX2, the one the processor has
** picked when the library loads. The same operations either way (AVX2
** without FMA: no contraction), so the same values, on wider vectors.
*/
#ifndef SALTA_WIDE_H
#define SALTA_WIDE_H

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define SALTA__WIDE __attribute__((target_clones("avx2", "default")))
#else
#define SALTA__WIDE
#endif

#endif

-- salta.docgen: the generated documents of doc/ (make doc), so that a
-- spec can tell when one is stale: doc/options.md from the option
-- declarations (salta.options), doc/reference.md from the help topics
-- (salta.help_topics) and doc/c_api.md from salta.h's own comments and
-- declarations.

local M = {}

-- The C API reference: salta.h's sections ("/* ---- name ---- */"), each
-- comment block as prose and each run of declarations as a C block.
function M.c_api(header)
  local out = { "# salta C API reference", "",
    "Generated from `engine/include/salta.h` by `make doc`; `spec/doc_spec.lua` fails when this file is stale.",
    "The header is the specification: each call states who owns what and how long a returned pointer",
    "stays valid. Link with `pkg-config --libs salta` after `make install`, or `build/libsalta.a`.", "" }
  local code = {}
  local function flush()
    if #code > 0 then
      out[#out + 1] = "```c"
      for _, l in ipairs(code) do out[#out + 1] = l end
      out[#out + 1] = "```"
      out[#out + 1] = ""
      code = {}
    end
  end
  local in_comment, prose = false, {}
  for line in (header .. "\n"):gmatch("(.-)\n") do
    local section = line:match("^/%* %-%-%-%- (.-) %-+ %*/$")
    if section then
      flush()
      out[#out + 1] = "## " .. section
      out[#out + 1] = ""
    elseif not in_comment and line:match("^/%*") then
      flush()
      in_comment = not line:match("%*/%s*$")
      local text = line:gsub("^/%*+%s?", ""):gsub("%s*%*/%s*$", "")
      prose = { text }
      if not in_comment then
        out[#out + 1] = table.concat(prose, " ")
        out[#out + 1] = ""
      end
    elseif in_comment then
      local text = line:match("^%s*%*/%s*$") and "" or line:gsub("%s*%*/%s*$", ""):gsub("^%*+%s?", "")
      prose[#prose + 1] = text
      if line:match("%*/%s*$") then
        in_comment = false
        out[#out + 1] = table.concat(prose, "\n"):gsub("^%s+", "")
        out[#out + 1] = ""
      end
    elseif line:match("^#ifndef SALTA_H") or line:match("^#define SALTA_H$") or line:match("^#endif")
      or line:match("^#ifdef __cplusplus") or line:match("^extern \"C\"") or line:match("^}$") then
      -- include guards and C++ linkage
    elseif line:match("%S") then
      code[#code + 1] = line
    else
      flush()
    end
  end
  flush()
  return table.concat(out, "\n")
end

function M.options()
  return require("salta.options").markdown()
end

function M.reference()
  return require("salta.help_topics").markdown()
end

-- write(dir): regenerate the documents into dir (the repository's doc/).
function M.write(dir, header_path)
  local f = assert(io.open(header_path or "engine/include/salta.h", "rb"))
  local header = f:read("a")
  f:close()
  local files = require("salta.files")
  files.write(dir .. "/options.md", M.options() .. "\n", "make doc")
  files.write(dir .. "/reference.md", M.reference() .. "\n", "make doc")
  files.write(dir .. "/c_api.md", M.c_api(header) .. "\n", "make doc")
end

return M

-- busted output handler: one line per failure with its message, a dot per
-- success, and the closing line "[label] N passed, N failed, N skipped".
-- The label (env SALTA_TEST_LABEL) keeps per-runner lines distinct from the
-- total that spec/run.sh prints last.
return function(options)
  local busted = require("busted")
  local handler = require("busted.outputHandlers.base")()
  local label = os.getenv("SALTA_TEST_LABEL") or "busted"

  local function report(t, kind)
    local msg = t.message
    if type(msg) ~= "string" then msg = require("pl.pretty").write(msg) end
    local where = t.element.trace and (t.element.trace.short_src .. ":" .. t.element.trace.currentline) or "?"
    io.write(("\n%s: %s\n  at %s\n  %s\n"):format(kind, handler.getFullName(t.element), where,
      (msg or "nil"):gsub("\n", "\n  ")))
    if options.verbose and t.trace and t.trace.traceback then io.write(t.trace.traceback, "\n") end
  end

  handler.testEnd = function(element, parent, status)
    if status == "success" then io.write(".")
    elseif status == "pending" then io.write("s")
    elseif status == "failure" then report(handler.failures[#handler.failures], "FAIL")
    elseif status == "error" then report(handler.errors[#handler.errors], "ERROR") end
    io.flush()
    return nil, true
  end

  handler.error = function(element, parent, message)
    -- errors outside a test (a spec file that does not load)
    if element.descriptor ~= "it" then
      io.write(("\nERROR in %s: %s\n"):format(element.name or "?", tostring(message)))
    end
    return nil, true
  end

  handler.suiteEnd = function()
    local failed = #handler.failures + #handler.errors
    io.write(("\n[%s] %d passed, %d failed, %d skipped\n"):format(label,
      #handler.successes, failed, #handler.pendings))
    io.flush()
    return nil, true
  end

  busted.subscribe({ "test", "end" }, handler.testEnd, { predicate = handler.cancelOnPending })
  busted.subscribe({ "suite", "end" }, handler.suiteEnd)
  busted.subscribe({ "error" }, handler.error)
  busted.subscribe({ "failure" }, handler.error)
  return handler
end

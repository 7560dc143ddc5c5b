-- A small test framework for Lua tests run by `lmkit run` (and registered in CTest):
--
--   local T = require "lmkit.testing"
--   T.test("zeros has the given shape", function() T.eq(lmkit.zeros(2, 3):size(), {2, 3}) end)
--   T.run()   -- prints each result and "N passed, N failed"; fails the run if any failed
--
-- Run one test by name: lmkit run file.lua -- --filter PATTERN (or LMKIT_TEST_FILTER=PATTERN).
local lmkit = require "lmkit"
local testing = {}
local tests = {}

function testing.test(name, fn)
  assert(type(name) == "string" and type(fn) == "function", "testing.test(name, function)")
  tests[#tests + 1] = {name = name, fn = fn}
end

local function fail(message, level)
  error(message, (level or 1) + 2)
end

local function deep_equal(a, b)
  if lmkit.is_tensor(a) and lmkit.is_tensor(b) then return a:equal(b) end
  if type(a) ~= type(b) then return false end
  if type(a) ~= "table" then return a == b end
  for k, v in pairs(a) do
    if not deep_equal(v, b[k]) then return false end
  end
  for k in pairs(b) do
    if a[k] == nil then return false end
  end
  return true
end

function testing.eq(actual, expected, message)
  if not deep_equal(actual, expected) then
    fail(("%sexpected %s, got %s"):format(message and (message .. ": ") or "",
         lmkit.show(expected), lmkit.show(actual)))
  end
end

-- |actual - expected| <= tolerance (default 1e-6) for numbers or tensors (elementwise).
function testing.near(actual, expected, tolerance, message)
  tolerance = tolerance or 1e-6
  local worst
  if lmkit.is_tensor(actual) or lmkit.is_tensor(expected) then
    local a = lmkit.is_tensor(actual) and actual or lmkit.tensor(actual)
    local e = lmkit.is_tensor(expected) and expected or lmkit.tensor(expected)
    worst = (a:double() - e:double()):abs():max():item()
  else
    worst = math.abs(actual - expected)
  end
  if not (worst <= tolerance) then
    fail(("%sexpected %s within %g, got %s (off by %g)"):format(message and (message .. ": ") or "",
         lmkit.show(expected), tolerance, lmkit.show(actual), worst))
  end
end

function testing.truthy(value, message)
  if not value then fail(message or ("expected a true value, got " .. lmkit.show(value))) end
end

-- The whole text of a file a test made or reads (fails the test, naming it, when it cannot be opened).
function testing.read_file(path)
  local f, why = io.open(path, "rb")
  if not f then fail(("cannot open %s: %s"):format(path, tostring(why))) end
  local text = f:read("a")
  f:close()
  return text
end

-- Calls fn, which must fail with a message containing `fragment` (plain text); returns the message.
function testing.raises(fn, fragment)
  local ok, err = pcall(fn)
  if ok then fail("expected an error" .. (fragment and (" containing '" .. fragment .. "'") or "")) end
  local text = tostring(err)
  if fragment and not text:find(fragment, 1, true) then
    fail(("expected an error containing '%s', got: %s"):format(fragment, text))
  end
  return text
end

local function filter_pattern()
  local args = rawget(_G, "arg") or {}
  for i = 1, #args do
    if args[i] == "--filter" then return args[i + 1] end
  end
  return os.getenv("LMKIT_TEST_FILTER")
end

function testing.run()
  local pattern = filter_pattern()
  local passed, failed, skipped = 0, 0, 0
  for _, t in ipairs(tests) do
    if pattern and not t.name:find(pattern) then
      skipped = skipped + 1
    else
      local ok, err = xpcall(t.fn, debug.traceback)
      if ok then
        passed = passed + 1
        io.write("[  OK  ] ", t.name, "\n")
      else
        failed = failed + 1
        io.write("[ FAIL ] ", t.name, "\n    ", tostring(err):gsub("\n", "\n    "), "\n")
      end
    end
  end
  io.write(("%d passed, %d failed, %d skipped\n"):format(passed, failed, skipped))
  io.flush()
  if passed + failed == 0 then error("no test ran" .. (pattern and (" (filter: " .. pattern .. ")") or ""), 0) end
  if failed > 0 then error(("%d test(s) failed"):format(failed), 0) end
end

return testing

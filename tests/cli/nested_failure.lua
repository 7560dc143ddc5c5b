-- A failure two calls deep: the message names this file and line, and a traceback follows.
local function inner()
  local t = lmkit.zeros(2)
  error("boom")
end
local function outer() inner() end
outer()

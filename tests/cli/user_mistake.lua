-- lmkit run user_mistake.lua -- KIND: a user's mistake fails with its message alone, no traceback:
--   file     an lmkit function given a file that is not there (its message names the file)
--   level0   error(message, 0): a message written for a person
-- A runtime error or error("...") with a position keeps its traceback (nested_failure.lua).
local kind = arg[1]
if kind == "file" then
  lmkit.read_tensors("no/such/outputs.npy")
elseif kind == "level0" then
  error("the corpus folder is empty: put ptb/ there first", 0)
end
error("user_mistake.lua: unknown kind " .. tostring(kind))

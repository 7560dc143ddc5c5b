-- An error whose value is a table with a __tostring that raises itself: the run ends with a
-- message that says so and a non-zero status, never a PANIC.
local object = setmetatable({}, {__tostring = function() error("the message itself is broken") end})
error(object)

-- Checks that --set values arrive typed, nested and strict, and that `arg`/`...` hold the rest.
local s = lmkit.settings
assert(s.lr == 0.5 and math.type(s.lr) == "float", "lr")
assert(s.epochs == 3 and math.type(s.epochs) == "integer", "epochs")
assert(type(s.heads) == "table" and s.heads[1] == "softmax" and s.heads[2] == "mos", "heads list")
assert(s.model.nhid == 960, "nested key")
assert(s.tag == "a,b", "quoted string keeps its comma")
assert(s.fast == true, "boolean")
assert(arg[1] == "extra1" and arg[2] == "extra2" and select("#", ...) == 2, "script arguments")
print("settings ok")

-- lmkit.random_state: Lua's math.random generator for the bindings. lmkit.seed seeds it with Torch's
-- (bindings/lua_module.cpp); a training run saves its state at each step boundary so that
-- lmkit.resume restores it exactly (bindings/lua_train.cpp): two integers drawn from the generator
-- reseed it (math.randomseed(x, y) fixes its whole state), and they are the state.
local random, randomseed, integer = math.random, math.randomseed, math.type
local M = {}

function M.seed(n)
  randomseed(n)
end

function M.capture()
  local x, y = random(0), random(0)
  randomseed(x, y)
  return {x, y}
end

function M.restore(state)
  if type(state) == "table" and integer(state[1]) == "integer" and integer(state[2]) == "integer" then
    randomseed(state[1], state[2])
  end
end

return M

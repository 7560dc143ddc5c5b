-- Strict globals for recipes: reading a global that was never set, or creating one inside a
-- function, is an error naming it (and the nearest existing name), instead of a silent nil.
local function distance(a, b)
  local row = {}
  for j = 0, #b do row[j] = j end
  for i = 1, #a do
    local diagonal, left = row[0], i
    row[0] = i
    for j = 1, #b do
      local up = row[j]
      local cost = a:sub(i, i) == b:sub(j, j) and 0 or 1
      left = math.min(up + 1, left + 1, diagonal + cost)
      row[j], diagonal = left, up
    end
  end
  return row[#b]
end

local function nearest(env, name)
  local best, best_d = nil, 3
  for k in pairs(env) do
    if type(k) == "string" then
      local d = distance(name, k)
      if d < best_d then best, best_d = k, d end
    end
  end
  return best
end

return function(env)
  local declared = {}
  for k in pairs(env) do declared[k] = true end
  setmetatable(env, {
    __newindex = function(t, name, value)
      if not declared[name] then
        local info = debug.getinfo(2, "S")
        if info and info.what ~= "main" and info.what ~= "C" then
          error(("assignment to undeclared global '%s' inside a function (make it local, or set it at "
                 .. "the top level of the file first)"):format(tostring(name)), 2)
        end
        declared[name] = true
      end
      rawset(t, name, value)
    end,
    __index = function(t, name)
      if declared[name] then return nil end
      local info = debug.getinfo(2, "S")
      if info and info.what == "C" then return nil end
      local guess = type(name) == "string" and nearest(t, name)
      error(("undefined global '%s'%s"):format(tostring(name),
            guess and (" (did you mean '" .. guess .. "'?)") or ""), 2)
    end,
  })
end

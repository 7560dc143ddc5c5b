-- lmkit.settings_tables: the two tables lmkit.configure and lmkit.settings hand to scripts (used by
-- bindings/lua_config.cpp).
local M = {}

-- lmkit.settings: a read-only view of the settings tree that calls mark() when it is read, so that
-- a script which never looks at its --set values can be told so.
function M.view(tree, mark)
  local function view(t)
    return setmetatable({}, {
      __index = function(_, key)
        mark()
        local value = t[key]
        if type(value) == "table" then return view(value) end
        return value
      end,
      __pairs = function()
        mark()
        return function(_, key)
          local k, v = next(t, key)
          if type(v) == "table" then v = view(v) end
          return k, v
        end, t, nil
      end,
      __len = function() mark() return #t end,
      __newindex = function(_, key) error(("lmkit.settings is read-only (setting '%s')"):format(tostring(key)), 2) end,
    })
  end
  return view(tree)
end

-- Recipes fail loudly: reading a setting that does not exist is an error naming it.
function M.strict(cfg)
  local function protect(t, path)
    local known = {}
    for k, v in pairs(t) do
      known[#known + 1] = tostring(k)
      if type(v) == "table" and next(v) ~= nil and type(next(v)) == "string" then protect(v, path .. k .. ".") end
    end
    table.sort(known)
    return setmetatable(t, {__index = function(_, key)
      error(("no setting '%s%s' (known: %s)"):format(path, tostring(key), table.concat(known, ", ")), 2)
    end})
  end
  return protect(cfg, "")
end

return M

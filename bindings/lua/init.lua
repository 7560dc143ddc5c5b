-- The Lua-side part of the lmkit module: help() and the value display used by the REPL.
-- Receives the module table built in C++ and extends it.
return function(lmkit)
  local function first_line(s)
    return (s or ""):match("^[^\n]*")
  end

  -- Raw (next, not pairs): help() of a table whose __pairs never ends must still return.
  local function sorted_keys(t)
    local keys = {}
    for k in next, t do
      if type(k) == "string" then keys[#keys + 1] = k end
    end
    table.sort(keys)
    return keys
  end

  local function is_identifier(s)
    return type(s) == "string" and s:match("^[%a_][%w_]*$") ~= nil
  end

  local function quote(s)
    return (("%q"):format(s):gsub("\\\n", "\\n"))
  end

  -- tostring that never raises: a __tostring that fails (or returns a non-string) is described.
  local function safe_tostring(value)
    local ok, text = pcall(tostring, value)
    if ok then return text end
    return ("(a %s whose __tostring failed: %s)"):format(type(value),
                                                        type(text) == "string" and text or "a non-string error")
  end

  -- The __tostring of a value's metatable, read raw (a __metatable field may hide it behind any value).
  local function has_tostring(value)
    local meta = getmetatable(value)
    return type(meta) == "table" and rawget(meta, "__tostring") ~= nil
  end

  -- A one-line description of any value, shallow for tables. Tables are read raw (no __index,
  -- __len or __pairs runs), so describing a value never runs — or fails in — the value's own code
  -- beyond its __tostring, which is called protected.
  -- Nested tables are shown to `depth` levels (3 unless given; deeper ones as {...}), each with at
  -- most `max_entries` entries, the whole line at most SHOW_CHARS characters; a table met again
  -- inside itself is shown as {<cycle>}.
  local SHOW_CHARS = 2000
  local function show(value, max_entries, depth)
    max_entries = max_entries or 30
    depth = depth or 3
    local budget = SHOW_CHARS
    local open = {}  -- the tables being shown, outermost first: a cycle leads back to one
    local function render(v, level)
      local kind = type(v)
      if kind == "string" then return quote(v) end
      if kind == "function" then
        local name = lmkit.doc(v)
        return name and ("function: " .. name) or tostring(v)
      end
      if level > 0 and lmkit.is_tensor(v) then
        return ("Tensor(%s, size %s)"):format(v:dtype(), table.concat(v:size(), "x"))
      end
      if kind ~= "table" or has_tostring(v) then return safe_tostring(v) end
      if next(v) == nil then return "{}" end
      if open[v] then return "{<cycle>}" end
      if level >= depth then return "{...}" end
      open[v] = true
      local parts, n = {}, rawlen(v)
      local function add(text)
        budget = budget - #text - 2
        parts[#parts + 1] = text
      end
      local shown = 0
      for i = 1, n do
        if shown >= max_entries or budget <= 0 then break end
        add(render(rawget(v, i), level + 1))
        shown = shown + 1
      end
      local named = {}
      for k in next, v do
        if not (math.type(k) == "integer" and k >= 1 and k <= n) then named[#named + 1] = k end
      end
      table.sort(named, function(a, b) return safe_tostring(a) < safe_tostring(b) end)
      for _, k in ipairs(named) do
        if shown >= max_entries or budget <= 0 then break end
        local key = is_identifier(k) and k or ("[" .. render(k, depth) .. "]")
        add(key .. " = " .. render(rawget(v, k), level + 1))
        shown = shown + 1
      end
      open[v] = nil
      local total = n + #named
      if total > shown then parts[#parts + 1] = ("... (%d more)"):format(total - shown) end
      return "{" .. table.concat(parts, ", ") .. "}"
    end
    return render(value, 0)
  end

  -- help's lines fit the terminal: long ones broken at spaces, continuations indented under their text.
  local function write_fitted(line, hang)
    io.write(lmkit.wrap_text(line, lmkit.terminal_columns(), hang), "\n")
  end

  local function print_doc(name, doc)
    io.write(name, "\n")
    for line in (doc .. "\n"):gmatch("([^\n]*)\n") do write_fitted("  " .. line, 2) end
  end

  local function list_functions(title, t, separator)
    io.write(title, "\n")
    for _, key in ipairs(sorted_keys(t)) do
      local value = rawget(t, key)
      local _, doc = lmkit.doc(value)
      if doc then
        write_fitted(("  %-14s %s"):format(key, first_line(doc)), 15)
      elseif type(value) == "table" and key ~= "settings" and key ~= "Tensor" and key ~= "Model" then
        io.write(("  %-14s (module: help(%s%s%s))\n"):format(key, "lmkit", separator, key))
      end
    end
  end

  local function help(x)
    if x == nil or x == lmkit then
      write_fitted("lmkit — softmax-bottleneck research toolkit. help(f) shows one function; " ..
                   "help(lmkit.Tensor) the tensor methods.\n", 0)
      list_functions("Functions:", lmkit, ".")
      return
    end
    if type(x) == "string" then
      local name, doc = lmkit.doc(x)
      if not name then name, doc = lmkit.doc("lmkit." .. x) end
      if not name then name, doc = lmkit.doc("Tensor:" .. x) end
      if not name then name, doc = lmkit.doc("Model:" .. x) end
      if not name then
        io.write(("no documentation for '%s' (try help() for the list)\n"):format(x))
        return
      end
      print_doc(name, doc)
      return
    end
    if lmkit.is_tensor(x) or x == lmkit.Tensor then
      local name, doc = lmkit.doc(lmkit.Tensor)
      print_doc(name, doc)
      io.write("\n")
      list_functions("Methods (t:name(...)):", lmkit.Tensor.methods, ":")
      return
    end
    if x == lmkit.Model or (type(x) == "userdata" and getmetatable(x) == lmkit.Model) then
      local name, doc = lmkit.doc(lmkit.Model)
      print_doc(name, doc)
      io.write("\n")
      list_functions("Methods (m:name(...)):", lmkit.Model.methods, ":")
      return
    end
    local name, doc = lmkit.doc(x)
    -- An object of an lmkit class (Run, Corpus, Vocab, SyntheticLanguage, ...): its class's doc and methods.
    local class = type(x) == "userdata" and getmetatable(x)
    if not name and type(class) == "table" then
      name, doc = lmkit.doc(class)
      if name then
        print_doc(name, doc)
        if type(rawget(class, "methods")) == "table" then
          io.write("\n")
          list_functions("Methods (x:name(...)):", rawget(class, "methods"), ":")
        end
        return
      end
    end
    if name then
      print_doc(name, doc)
    elseif type(x) == "table" then
      list_functions("Fields:", x, ".")
    else
      io.write(("no documentation for %s\n"):format(show(x)))
    end
  end

  -- The keys of an options table `t` against the set `allowed`: a key it does not know is an error
  -- in lmkit's words, naming the closest allowed key, blamed on the caller `level` levels up (1: the
  -- function that calls check_options... 2: its caller).
  local function check_options(t, allowed, owner, level)
    level = (level or 1) + 1
    if type(t) ~= "table" then
      error(("bad argument #1 to '%s' (table expected, got %s)"):format(owner, type(t)), level)
    end
    for k in pairs(t) do
      if not allowed[k] then
        local names = {}
        for name in pairs(allowed) do names[#names + 1] = name end
        table.sort(names)
        error(lmkit.unknown_option(owner, tostring(k), names), level)
      end
    end
    return t
  end

  -- help's text through a pager when it is longer than the terminal ($PAGER, else `less -FRX`): from
  -- a file the pager reads, not a pipe, so that quitting it early never hurts the session. Output
  -- that is not a terminal (a pipe, a test) is written as it is.
  local function shell_quoted(text) return "'" .. text:gsub("'", "'\\''") .. "'" end
  local function page(text, write)
    local _, lines = text:gsub("\n", "")
    local rows = tonumber(os.getenv("LINES") or "") or 24
    local pager = os.getenv("PAGER")
    if pager == nil or pager == "" then
      pager = os.execute("command -v less >/dev/null 2>&1") and "less -FRX" or nil
    end
    if lmkit.terminal_columns() > 0 and lines >= rows - 1 and pager then
      local file = os.tmpname()
      local f = io.open(file, "w")
      if f and f:write(text) and f:close() then
        io.stdout:flush()  -- what was written before comes before the pager's screen
        local shown = os.execute(pager .. " " .. shell_quoted(file))
        os.remove(file)
        if shown then return end
      else
        os.remove(file)
      end
    end
    write(text)
  end

  local function paged_help(...)
    local chunks, write = {}, io.write
    io.write = function(...)
      for _, piece in ipairs({...}) do chunks[#chunks + 1] = tostring(piece) end
      return io.stdout
    end
    local ok, err = pcall(help, ...)
    io.write = write
    if not ok then error(err, 0) end
    page(table.concat(chunks), write)
  end

  lmkit.help = paged_help
  lmkit.show = show
  lmkit.check_options = check_options
  lmkit.document(check_options, "lmkit.check_options", "lmkit.check_options(t, allowed, owner[, level]) -> t\nChecks an options table's keys against the set `allowed` ({name = true, ...}): an unknown key is an error naming the closest allowed one, as lmkit's own options are, blamed on the caller `level` levels up (1: whoever called check_options).")
  lmkit.document(paged_help, "lmkit.help", "help([value | name])\nPrints the documentation of an lmkit function, class or module (no argument: all of lmkit); on a terminal, text longer than the screen goes through $PAGER (default less -FRX).")
  lmkit.document(show, "lmkit.show", "lmkit.show(value[, max_entries[, depth]]) -> string\nA one-line description of a value, as the REPL echoes it: nested tables to `depth` levels (default 3; deeper ones as {...}), at most max_entries (30) entries each and 2,000 characters in all; a table inside itself as {<cycle>}.")
  lmkit.report = require("lmkit.report")(lmkit)
  lmkit.plot = require("lmkit.plot")(lmkit)
end

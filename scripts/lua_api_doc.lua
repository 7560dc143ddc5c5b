-- Writes docs/lua-api.md from the doc strings registered with every lmkit function and method,
-- so the reference cannot drift from the code (tests/CMakeLists.txt checks it is current).
--
--   ./build/lmkit run scripts/lua_api_doc.lua > docs/lua-api.md
local out = {}
local function w(...) for _, s in ipairs({...}) do out[#out + 1] = s end end

local function entries(t, include)
  local list = {}
  for name, value in pairs(t) do
    local full, doc = lmkit.doc(value)
    if type(name) == "string" and full and (not include or include(name, value)) then
      list[#list + 1] = {name = name, full = full, doc = doc}
    end
  end
  table.sort(list, function(a, b) return a.name < b.name end)
  return list
end

local function section(list)
  for _, e in ipairs(list) do
    local signature, rest = e.doc:match("^([^\n]*)\n?(.*)$")
    w("### `", e.full, "`\n\n```lua\n", signature, "\n```\n\n")
    if rest ~= "" then w(rest, "\n\n") end
  end
end

w([[
# Lua API reference

Generated from lmkit's own doc strings by `scripts/lua_api_doc.lua` — `help(x)` in the REPL shows
the same text. Conventions:

- **1-based**: dimensions, indices and index tensors count from 1, as Lua does; -1 is the last.
  Ranges `{a, b}` include both ends. (Token ids and other *values* are not indices and keep their meaning.)
- **Options tables** `{dtype=, device=, requires_grad=}` are checked: an unknown key is an error that lists the accepted ones.
- **Errors** follow Lua's style: `bad argument #2 to 'lmkit.zeros' (integer expected, got string)`;
  failures inside Torch are reported with the operation's name and Torch's message.
- dtypes: `float32` (default), `float64`, `float16`, `bfloat16`, `int64`, `int32`, `int16`, `int8`, `uint8`, `bool`;
  devices: `cpu`, `cuda`, `cuda:N`.

]])

w("## Module `lmkit`\n\n")
section(entries(lmkit, function(_, v) return type(v) == "function" end))
local submodules = {}
for name, value in pairs(lmkit) do
  if type(value) == "table" and name ~= "Tensor" and name ~= "Model" and name ~= "settings" then submodules[#submodules + 1] = name end
end
table.sort(submodules)
for _, name in ipairs(submodules) do
  w("## Module `lmkit.", name, "`\n\n")
  section(entries(lmkit[name], function(_, v) return type(v) == "function" end))
end
local _, tensor_doc = lmkit.doc(lmkit.Tensor)
w("## Class `lmkit.Tensor`\n\n", tensor_doc, "\n\n")
section(entries(lmkit.Tensor.methods))
local _, model_doc = lmkit.doc(lmkit.Model)
w("## Class `lmkit.Model`\n\n", model_doc, "\n\n")
section(entries(lmkit.Model.methods))
w([[
## Memory

Lua's collector sees a tensor as a few bytes of its own heap while the tensor holds megabytes — and,
through its autograd graph, every activation saved behind it. lmkit keeps the collector in step with
tensor memory, so that a loop, a head written in Lua or an analysis never needs `collectgarbage`:

- **Counted host memory.** From lmkit's start on (the `lmkit` program's first step, or `require "lmkit"`
  in another Lua), every CPU tensor Torch allocates goes through a counting allocator placed under
  Torch's own (`lmkit.tensor_memory().host`: one atomic number, read for free). Tensors that map a file
  (`lmkit.read_tensors` of a large file) or that existed before are not counted.
- **A full collection when tensors outgrow what the last one left.** Before a tensor reaches Lua, lmkit
  runs a full collection if host tensor bytes exceed max(16 MiB, 2 × what the last collection left) —
  Lua's own pause of 200%, applied to tensor bytes. A collection that frees little lets the threshold
  climb with the live set; one that frees much brings it back. In a build with lmkit's CUDA side, CUDA
  tensors are paced the same way by the device's allocated bytes (floor 256 MiB).
- **Released when a call returns.** After a Lua function that lmkit calls returns (a head's `forward`,
  `nll` or `fn`, on every step), lmkit runs a young collection: the tensors the function made and did
  not return, and the graph each one holds, are freed then, not when the collector next finds time.
  This is what generational mode makes cheap (a young collection visits only what is new), so lmkit
  puts Lua's collector in generational mode when it loads. (What a call made stays until the next full
  collection when a full collection ran in the middle of that call: it made those objects old.)
  `collectgarbage("incremental")` in a script undoes the mode and the release becomes a step of the
  incremental collector; `collectgarbage("stop")` stops lmkit's collections too, except the last
  resort below.
- **Once more before an allocation fails.** When Torch cannot allocate host memory on the thread that
  runs the script, lmkit runs a full collection and the allocation is tried again; only then does it
  fail ("out of memory: it asked for ..."). On a GPU (a build with lmkit's CUDA side) Torch's allocator
  asks at every miss of its cache; lmkit collects there only when the device has less than 1/16 of its
  memory free, and never while a CUDA graph is captured. A `__gc` function of the script's that such a
  collection runs may release things but not compute with lmkit: Torch is in the middle of the failing
  allocation, and the call gets an error saying so.

`lmkit.tensor_memory()` shows the counts (host bytes now and at their peak, the process's resident
memory, and the collections lmkit ran); docs/benchmarks.md ("Lua heads") measures what this costs.

## Command-line settings

`lmkit run recipe.lua --set key=value ...` makes the settings visible as `lmkit.settings` (types
inferred: integers, numbers, `true`/`false`, comma-separated lists, `"quoted"` strings; dotted keys
nest) and applies them to a recipe's defaults through `lmkit.configure(defaults)`, where each value is
read as the type of the default it replaces and an unknown key is an error naming the nearest known one.
`lmkit.settings` is read-only; a script that never reads its settings (neither `lmkit.configure` nor
`lmkit.settings`) gets a warning naming the `--set` values that had no effect.
Scripts run with strict globals: reading an undefined global is an error (`--no-strict` turns this off).
]])
io.write(table.concat(out))

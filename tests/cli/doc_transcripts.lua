-- lmkit run doc_transcripts.lua -- LMKIT SOURCE_DIR: the REPL transcripts of the README and the
-- getting-started guide, replayed through `lmkit repl`, must print what the documents show.
-- In a fenced block, "lmkit> " and "   >> " lines are typed; every other line after the first
-- prompt is expected output, in order (the README once showed `{3, 4}` for a line that printed
-- nothing).
local lmkit_bin, source = arg[1], arg[2]
assert(lmkit_bin and source, "usage: lmkit run doc_transcripts.lua -- LMKIT SOURCE_DIR")

local function read(path)
  local f = assert(io.open(path))
  local text = f:read("a")
  f:close()
  return text
end

local function transcripts(text)
  local found = {}
  for block in text:gmatch("```[%w]*\n(.-)```") do
    if block:find("lmkit> ", 1, true) then
      local t = {inputs = {}, expected = {}}
      local started = false
      for line in block:gmatch("([^\n]*)\n") do
        local typed = line:match("^lmkit> (.*)$") or line:match("^   >> (.*)$")
        if typed then
          started = true
          t.inputs[#t.inputs + 1] = typed
        elseif started then
          t.expected[#t.expected + 1] = line
        end
      end
      found[#found + 1] = t
    end
  end
  return found
end

local failures, checked = 0, 0
for _, doc in ipairs{"README.md", "docs/getting-started.md"} do
  for i, t in ipairs(transcripts(read(source .. "/" .. doc))) do
    local input = os.tmpname()
    local f = assert(io.open(input, "w"))
    f:write(table.concat(t.inputs, "\n"), "\n")
    f:close()
    local pipe = assert(io.popen(("'%s' repl < '%s' 2>&1"):format(lmkit_bin, input)))
    local output = pipe:read("a")
    pipe:close()
    os.remove(input)
    local lines = {}
    for line in (output .. "\n"):gmatch("([^\n]*)\n") do lines[#lines + 1] = line end
    local at = 1
    for _, want in ipairs(t.expected) do
      local found = false
      while at <= #lines do
        at = at + 1
        if lines[at - 1] == want then
          found = true
          break
        end
      end
      checked = checked + 1
      if not found then
        failures = failures + 1
        io.write(("%s, transcript %d: expected the line\n  %s\nin order in the REPL's output:\n%s\n"):format(
          doc, i, want, output))
        break
      end
    end
  end
end
if failures > 0 then error(("%d transcript(s) differ from the REPL"):format(failures), 0) end
print(("doc transcripts ok: %d lines"):format(checked))

-- `lmkit run interrupted_script.lua --set wait=loop|sleep`: sends its own process Ctrl-C (SIGINT)
-- after 0.3 s, while it waits in a Lua loop or in lmkit.process.sleep (30 s): either way `lmkit run`
-- must stop at once and exit with 130, as it does when Ctrl-C lands inside training.
local cfg = lmkit.configure({wait = "loop"})
os.execute(("(sleep 0.3; kill -INT %d) >/dev/null 2>&1 &"):format(lmkit.process.pid()))
local start = lmkit.clock()
if cfg.wait == "sleep" then
  lmkit.process.sleep(30)
else
  local n = 0
  while lmkit.clock() - start < 30 do n = n + 1 end
end
print(("not interrupted after %.1f s"):format(lmkit.clock() - start))

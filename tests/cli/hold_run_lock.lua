-- lmkit run hold_run_lock.lua -- LMKIT RUN_DIR: `lmkit status RUN_DIR` asked while this process holds
-- the run directory's lock, as a training run holds it while it trains; prints what status printed.
local lmkit_bin, dir = arg[1], arg[2]
assert(lmkit_bin and dir, "usage: lmkit run hold_run_lock.lua -- LMKIT RUN_DIR")
lmkit.fs.with_lock(dir, function()
  local status = assert(io.popen(("'%s' status '%s' 2>&1; echo \"exit $?\""):format(lmkit_bin, dir)))
  io.write(status:read("a"))
  status:close()
end, "training run " .. dir)

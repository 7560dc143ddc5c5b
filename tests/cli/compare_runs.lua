-- lmkit run compare_runs.lua -- DIR_A DIR_B: the two runs' metrics and final numbers must agree
-- exactly, wall-clock fields and the runs' ids aside.
local a, b = lmkit.open_run(arg[1]), lmkit.open_run(arg[2])
local clock = {tokens_per_s = true, seconds = true, epoch_seconds = true, run_id = true}
local ma, mb = a:metrics(), b:metrics()
assert(#ma == #mb, ("metrics differ in length: %d vs %d records"):format(#ma, #mb))
for i = 1, #ma do
  for k, v in pairs(ma[i]) do
    if not clock[k] and mb[i][k] ~= v then
      error(("record %d field %s differs: %s vs %s"):format(i, k, tostring(v), tostring(mb[i][k])))
    end
  end
end
for _, k in ipairs{"valid_loss", "test_loss", "train_loss", "steps"} do
  assert(a:summary()[k] == b:summary()[k], "summary field " .. k .. " differs")
end
print(("runs agree: %d metric records"):format(#ma))

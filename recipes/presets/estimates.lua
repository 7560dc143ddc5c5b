-- What a task of a recipe will cost on a GPU, from rates measured on one (docs/benchmarks.md, "On an
-- H100"): lmkit.train's tokens per second at the paper's sizes and the peak of live tensors on the
-- device, per dataset and head. `lmkit batch --dry-run` and `lmkit run --set dry_run=true` show them
-- for each task a recipe's `needs` describes, before anything is submitted.
--   local estimates = require "presets.estimates"
--   estimates.task{dataset = "ptb", head = "mos", scale = "paper", epochs = 1000} -> {gpu_hours=, peak_mb=, from=} | nil, why
local estimates = {}

estimates.machine = "one NVIDIA H100 80GB, docs/benchmarks.md (2026-11-27), training steps only"

-- Training tokens per epoch (docs/data.md: the splits' token counts, <eos> included).
local TRAIN_TOKENS = {ptb = 929589, ["wikitext-2"] = 2088628}

-- tokens/s of lmkit.train and peak device MB of live tensors (nil: not measured) at the paper's
-- sizes and batch: PTB 70×20 (MoS 70×12), WikiText-2 70×80 (MoS 70×15). LMS-PLIF on WikiText-2 was
-- measured before its loss became one op (ops::plif_nll): its memory is an upper bound.
local RATES = {
  ptb = {softmax = {85743, 767}, sigsoftmax = {78123, 767}, gss = {86167, 767}, plif = {75801, 1280},
         plif_frozen = {75801, 1280}, mos = {40009, nil}},
  ["wikitext-2"] = {softmax = {151954, 4345}, plif = {80501, 11131}, plif_frozen = {80501, 11131},
                    mixtape = {129726, 4808}, mos = {20149, 848}},
}

-- o: dataset, head (a line-up name), scale, epochs, protocol ("full" unless the mini protocol).
-- nil and why when there is nothing measured to estimate from.
function estimates.task(o)
  if o.scale == "tiny" then return nil, "tiny scale: minutes on a CPU" end
  if o.protocol == "mini" then return nil, "no measured rate on a mini protocol (a tenth of the data: far less than the full corpus's)" end
  local rate = RATES[o.dataset] and RATES[o.dataset][o.head]
  if not rate then return nil, ("no measured rate for %s on %s"):format(tostring(o.head), tostring(o.dataset)) end
  return {gpu_hours = o.epochs * TRAIN_TOKENS[o.dataset] / rate[1] / 3600, peak_mb = rate[2], from = estimates.machine}
end

return estimates

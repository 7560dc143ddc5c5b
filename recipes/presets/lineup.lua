-- The thesis's line-up of heads (chapter 4.4.2 on: Softmax, SS, GSS, LMS-PLIF, MoS, MoC) and what
-- the recipes comparing them over seeds share: which hyperparameter family a head trains with, the
-- GSS (c, k) the thesis chose per dataset, the seed list (the preset's seed plus "randomly sampled"
-- ones), one trained cell's numbers, and mean ± sd / rank-sum summaries of a sample.
--   local lineup = require "presets.lineup"
--   local p = lineup.preset("mos", cfg)                 -- MoS/MoC train with the MoS configuration
--   local result = lineup.run_cell{name = "gss", cfg = cfg, seed = 141, dir = ctx.dir .. "/run", rank = true}
local presets = require "presets.awd_lstm"
local lineup = {}

-- GSS(c, k) chosen after the grid (thesis §4.4.1, end): PTB (−1.5, 2.5), WT2 (−1.5, 3.0).
lineup.gss = {ptb = {c = -1.5, k = 2.5}, ["wikitext-2"] = {c = -1.5, k = 3.0}}

-- How the thesis's tables name the heads. "plif_frozen" is LMS-PLIF† (Table 5.16).
lineup.labels = {softmax = "Softmax", sigsoftmax = "SS", gss = "GSS", plif = "LMS-PLIF",
                 plif_frozen = "LMS-PLIF†", mos = "MoS", moss = "MoSS", moc = "MoC"}

function lineup.label(name) return lineup.labels[name] or name end

-- The mixtures train with the MoS code's configuration (Table 4.3's right half), the rest with AWD-LSTM's.
function lineup.family(name)
  return (name == "mos" or name == "moss" or name == "moc") and "mos" or "awd"
end

function lineup.preset(name, cfg)
  return presets.resolve{family = lineup.family(name), dataset = cfg.dataset, scale = cfg.scale}
end

-- The head spec of a line-up name under a resolved preset.
function lineup.head(p, name)
  if name == "gss" then
    local ck = lineup.gss[p.dataset] or error("lineup: no chosen GSS (c, k) for dataset '" .. tostring(p.dataset) .. "'")
    return presets.head(p, "gss", {c = ck.c, k = ck.k})
  elseif name == "plif_frozen" then
    return presets.head(p, "plif", {freeze = true})
  end
  return presets.head(p, name)
end

-- A list setting: "softmax,mos" (a string default stays a string under --set) or a Lua array.
function lineup.list(value)
  if type(value) == "table" then return value end
  local items = {}
  for item in tostring(value):gmatch("[^,%s]+") do items[#items + 1] = item end
  return items
end

-- n seeds: the preset's own (141, 28, 1881: what the papers report) first, then n − 1 fixed
-- pseudo-random integers standing in for the thesis's "10 randomly sampled seeds". They depend
-- only on the position, so every head sees the same ones and a rerun finds the same cells.
function lineup.seeds(p, n)
  local seeds = {p.train.seed}
  local x = 20240229
  while #seeds < n do
    x = (1103515245 * x + 12345) % 2147483648  -- the C standard's example LCG
    local s = 1 + (x >> 8) % 99999
    local fresh = true
    for _, old in ipairs(seeds) do fresh = fresh and old ~= s end
    if fresh then seeds[#seeds + 1] = s end
  end
  return seeds
end

-- Number of trainable parameters (frozen ones, like LMS-PLIF†'s slopes, do not count; the thesis's #Param).
function lineup.trainable_parameters(model)
  local n = 0
  for _, t in ipairs(model:parameters()) do n = n + t:numel() end
  return n
end

-- Trains one cell and returns the numbers every line-up table draws from:
--   lineup.run_cell{name=, cfg=, seed=, dir=, train={...}, model={...}, preset=, head=, corpus=, rank=true}
-- `name` picks the preset and head (unless `preset`/`head` are given); `cfg` is the recipe's
-- (scale, dataset, epochs > 0 overrides the scale's); `rank` adds the Press rank of Q on the test split.
function lineup.run_cell(o)
  local cfg = o.cfg
  local p = o.preset or lineup.preset(o.name, cfg)
  local train = {}
  if (cfg.epochs or 0) > 0 then train.epochs = cfg.epochs end
  for k, v in pairs(o.train or {}) do train[k] = v end
  local model, s, corpus = presets.train_cell{preset = p, head = o.head or lineup.head(p, o.name), dir = o.dir,
                                              seed = o.seed, model = o.model, train = train, corpus = o.corpus}
  local result = {train_ppl = s.train_ppl, valid_ppl = s.valid_ppl, test_ppl = s.test_ppl, status = s.status,
                  epochs = s.epochs, best_epoch = s.best_epoch, switch_epoch = s.switch_epoch,
                  seconds_per_epoch = s.seconds_per_epoch, params = lineup.trainable_parameters(model),
                  params_total = model:parameter_count().total}
  if o.rank then
    -- train_cell returns the best model (the checkpoint the test perplexity is of).
    local sv, rows, cols = lmkit.analysis.logp_svdvals(model, corpus.test, {batch_size = 1})
    result.rank, result.contexts = lmkit.analysis.press_rank(sv, rows, cols), rows
  end
  return result
end

-- mean, sd (nil below 2 values) and n of the non-nil values of `key` over results (a list of
-- result tables, some nil).
function lineup.sample(results, key)
  local values = {}
  for _, r in pairs(results) do
    if r and r[key] ~= nil then values[#values + 1] = r[key] end
  end
  if #values == 0 then return nil, nil, 0, values end
  local sd = #values >= 2 and lmkit.stats.sd(values) or nil
  return lmkit.stats.mean(values), sd, #values, values
end

-- Two-sided Wilcoxon rank-sum p-value of two samples (the thesis's test), nil when either has
-- fewer than 2 values (the test says nothing there).
function lineup.ranksums_p(a, b)
  if #a < 2 or #b < 2 then return nil end
  local _, p = lmkit.stats.ranksums(a, b)
  return p
end

-- Writes a report table as <path>.md, .csv and .tex, creating the folder (a report of a recipe
-- none of whose cells has run yet has no output folder).
function lineup.save(t, path)
  local dir = path:match("^(.*)/[^/]*$")
  if dir and dir ~= "" then os.execute(("mkdir -p '%s'"):format((dir:gsub("'", "'\\''")))) end
  for _, ext in ipairs{"md", "csv", "tex"} do t:save(path .. "." .. ext) end
end

return lineup

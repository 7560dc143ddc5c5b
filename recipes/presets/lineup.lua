-- The thesis's line-up of heads (chapter 4.4.2 on: Softmax, SS, GSS, LMS-PLIF, MoS, MoC) and what
-- the recipes comparing them over seeds share: which hyperparameter family a head trains with, the
-- GSS (c, k) the thesis chose per dataset, the seed list (the preset's seed plus "randomly sampled"
-- ones), one trained cell's numbers, mean ± sd / rank-sum summaries of a sample, and the parts
-- of the seed tables (results per head, ppl columns and rows, rank-sum rows) the recipes share.
--   local lineup = require "presets.lineup"
--   local p = lineup.preset("mos", cfg)                 -- MoS/MoC train with the MoS configuration
--   local result = lineup.run_cell{name = "gss", cfg = cfg, seed = 141, dir = ctx.dir .. "/run", rank = true}
local presets = require "presets.awd_lstm"
local measure = require "presets.measure"
local report_files = require "presets.report_files"
local estimates = require "presets.estimates"
local lineup = {}

-- A line-up name's head: its kind (the name itself unless given), its options, and options chosen
-- per dataset. GSS(c, k) chosen after the grid (thesis §4.4.1, end): PTB (−1.5, 2.5), WT2 (−1.5, 3.0);
-- "plif_frozen" is LMS-PLIF with its slopes kept at their initial values (LMS-PLIF†).
lineup.heads = {
  gss = {per_dataset = {ptb = {c = -1.5, k = 2.5}, ["wikitext-2"] = {c = -1.5, k = 3.0}}},
  plif_frozen = {kind = "plif", options = {freeze = true}},
}

-- How the thesis's tables name the heads. "plif_frozen" is LMS-PLIF† (Table 5.16).
lineup.labels = {softmax = "Softmax", sigsoftmax = "SS", gss = "GSS", plif = "LMS-PLIF",
                 plif_frozen = "LMS-PLIF†", mos = "MoS", moss = "MoSS", moc = "MoC",
                 mixtape = "Mixtape"}

function lineup.label(name) return lineup.labels[name] or name end

-- The mixtures train with the MoS code's configuration (Table 4.3's right half), the rest with AWD-LSTM's.
function lineup.family(name)
  return presets.head_projects(name) and "mos" or "awd"
end

function lineup.preset(name, cfg)
  -- corpus: a recipe's setting where it declares one (a recipe's cfg refuses undeclared keys).
  return presets.resolve{family = lineup.family(name), dataset = cfg.dataset, scale = cfg.scale, corpus = rawget(cfg, "corpus")}
end

-- What a line-up cell needs (a recipe's `needs`, shown by dry runs and checked before a batch is
-- submitted): its corpus when it reads real files, its epochs, and the estimate of its cost.
-- `epochs`: the cell's own count where the recipe schedules it (else the setting's, else the scale's).
function lineup.needs(cell, cfg, epochs)
  local p = lineup.preset(cell.head, cfg)
  epochs = epochs or ((rawget(cfg, "epochs") or 0) > 0 and cfg.epochs or p.train.epochs)
  local protocol = p.corpus.kind == "files" and (p.corpus.protocol or "full") or nil
  local estimate, why = estimates.task{dataset = p.dataset, head = cell.head, scale = p.scale, epochs = epochs,
                                       protocol = protocol}
  return {what = ("%s, %s, %s scale"):format(lineup.label(cell.head), presets.dataset_labels[p.dataset] or p.dataset, p.scale),
          epochs = epochs, corpus = protocol and {name = p.corpus.name, protocol = protocol} or nil,
          estimate = estimate, no_estimate = why}
end

-- The model sizes that give a line-up head decoder width d: emb = nhidlast = d for the heads on the
-- logits, emb = d alone for the mixtures (their latent width; their last LSTM layer keeps its own).
function lineup.sizes_at(name, d)
  if lineup.family(name) == "mos" then return {emb = d} end
  return {emb = d, nhidlast = d}
end

-- The head spec of a line-up name under a resolved preset.
function lineup.head(p, name)
  local entry = lineup.heads[name] or {}
  local options = {}
  for k, v in pairs(entry.options or {}) do options[k] = v end
  if entry.per_dataset then
    local chosen = entry.per_dataset[p.dataset]
      or error(("lineup: no chosen options of '%s' for dataset '%s'"):format(name, tostring(p.dataset)))
    for k, v in pairs(chosen) do options[k] = v end
  end
  return presets.head(p, entry.kind or name, options)
end

-- A list setting: "softmax,mos" (a string default stays a string under --set) or a Lua array.
function lineup.list(value)
  if type(value) == "table" then return value end
  local items = {}
  for item in tostring(value):gmatch("[^,%s]+") do items[#items + 1] = item end
  return items
end

-- A list of positive integers: "8,16,24" (a string default stays a string under --set) or a Lua
-- array; `what` names the setting in the error ("hidden_size: dims").
function lineup.integers(value, what)
  local list = {}
  for _, item in ipairs(lineup.list(value)) do
    local n = math.tointeger(tonumber(item))
    if not n or n < 1 then error(("%s must list positive integers, got '%s'"):format(what, tostring(item)), 0) end
    list[#list + 1] = n
  end
  if #list == 0 then error(("%s is empty"):format(what), 0) end
  return list
end

-- n seeds: the preset's own (141, 28, 1881: what the papers report) first, then n − 1 fixed
-- pseudo-random integers standing in for the thesis's "10 randomly sampled seeds". They depend
-- only on the position and on `stream` (a string, e.g. the head's name: each head then draws its
-- own seeds, as the thesis sampled them per model, so that a rank-sum test compares independent
-- samples; without a stream every caller sees the same ones). A rerun finds the same cells.
function lineup.seeds(p, n, stream)
  local seeds = {p.train.seed}
  local x = 20240229
  for i = 1, #(stream or "") do x = (x * 31 + stream:byte(i)) % 2147483648 end
  while #seeds < n do
    x = (1103515245 * x + 12345) % 2147483648  -- the C standard's example LCG
    local s = 1 + (x >> 8) % 99999
    local fresh = true
    for _, old in ipairs(seeds) do fresh = fresh and old ~= s end
    if fresh then seeds[#seeds + 1] = s end
  end
  return seeds
end

-- The cells of a seed grid: for each head, lineup.seeds(n) of its preset, numbered by seed_index
-- (1 = the configuration's own seed; lineup.by_name tells the sampled ones from it).
-- o.per_head draws each head's sampled seeds from a stream of its own (compare_heads, frozen_plif
-- and fair_mos_softmax: the thesis sampled seeds per model, and its rank-sum tests compare
-- independent samples); otherwise the heads share them.
function lineup.seed_cells(heads, cfg, o)
  local cells = {}
  for _, head in ipairs(heads) do
    for i, seed in ipairs(lineup.seeds(lineup.preset(head, cfg), cfg.seeds, (o or {}).per_head and head or nil)) do
      cells[#cells + 1] = {head = head, seed = seed, seed_index = i}
    end
  end
  return cells
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
  local train = presets.train_overrides(cfg)
  for k, v in pairs(o.train or {}) do train[k] = v end   -- the caller's options win over the settings
  local model, s, corpus = presets.train_cell{preset = p, head = o.head or lineup.head(p, o.name), dir = o.dir,
                                              seed = o.seed, model = o.model, train = train, corpus = o.corpus}
  local result = {train_ppl = s.train_ppl, valid_ppl = s.valid_ppl, test_ppl = s.test_ppl, status = s.status,
                  epochs = s.epochs, best_epoch = s.best_epoch, switch_epoch = s.switch_epoch,
                  seconds_per_epoch = s.seconds_per_epoch, params = lineup.trainable_parameters(model),
                  params_total = model:parameter_count().total}
  if o.rank then
    -- train_cell returns the best model (the checkpoint the test perplexity is of).
    result.rank, result.contexts, result.vocab, result.rank_method =
      measure.rank(model, corpus, measure.contexts(-1, cfg.dataset))
  end
  return presets.with_yardsticks(result, corpus)
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

-- Two-sided unpaired (Student's) t-test p-value of two samples — the conference paper's test
-- (its Tables 2 and 4) — nil when either has fewer than 2 values.
function lineup.ttest_p(a, b)
  if #a < 2 or #b < 2 then return nil end
  local _, p = lmkit.stats.ttest_ind(a, b)
  return p
end

-- The results of a seed grid (cells with `seed_index`, 1 = the configuration's own seed) per
-- name of the cell field `field` ("head", "model"), for each of `names`:
--   all[name]       every finished result (the mean ± sd tables are over all seeds),
--   sampled[name]   those of the sampled seeds only (seed_index > 1: the rank-sum tests leave the
--                   configuration's own seed out, as the thesis does),
--   expected[name]  how many cells the grid has for it, finished or not (the "n/m" seeds column).
function lineup.by_name(results, names, field)
  local all, sampled, expected = {}, {}, {}
  for _, name in ipairs(names) do all[name], sampled[name], expected[name] = {}, {}, 0 end
  for _, r in ipairs(results) do
    local name = r.cell[field]
    expected[name] = expected[name] + 1
    if r.result then
      table.insert(all[name], r.result)
      if r.cell.seed_index > 1 then table.insert(sampled[name], r.result) end
    end
  end
  return all, sampled, expected
end

-- A column's paper values for a table whose rows name their entry of `paper` in row[field]
-- (paper[row[field]][key]; nil where the paper has no such row).
function lineup.paper_column(paper, field, key)
  return function(row) return paper[row[field]] and paper[row[field]][key] end
end

-- The train, validation and test ppl columns (mean ± sd, the paper's beside; best test ppl marked)
-- of the seed tables; paper_of(key) gives a column's paper values.
function lineup.ppl_columns(paper_of)
  return {
    {key = "train_ppl", label = "Train ppl", digits = 2, sd = "train_sd", paper = paper_of("train_ppl")},
    {key = "valid_ppl", label = "Validation ppl", digits = 2, sd = "valid_sd", paper = paper_of("valid_ppl")},
    {key = "test_ppl", label = "Test ppl", digits = 2, sd = "test_sd", paper = paper_of("test_ppl"), best = "min"},
  }
end

-- The lists given, one after the other (a table's columns from shared and own parts).
function lineup.join(...)
  local joined = {}
  for _, list in ipairs{...} do
    for _, item in ipairs(list) do joined[#joined + 1] = item end
  end
  return joined
end

-- Mean and sd of train, validation and test ppl over `rs` into a row (the ppl_columns' keys).
function lineup.add_ppl_means(row, rs)
  row.train_ppl, row.train_sd = lineup.sample(rs, "train_ppl")
  row.valid_ppl, row.valid_sd = lineup.sample(rs, "valid_ppl")
  row.test_ppl, row.test_sd = lineup.sample(rs, "test_ppl")
  return row
end

-- A head's row of a seed table over all seeds: its label, "finished/expected" seeds, the paper's
-- #Param, time and test sd (paper[head]), and ours: #Param, time per epoch, ppl mean ± sd.
function lineup.head_row(head, all, expected, paper)
  local published = paper[head] or {}
  local row = {["function"] = lineup.label(head), head = head, n = ("%d/%d"):format(#all[head], expected[head]),
               params_paper = published.params, time_paper = published.time, test_sd_paper = published.test_sd}
  if #all[head] > 0 then
    row.params = all[head][1].params
    row.time = lineup.sample(all[head], "seconds_per_epoch")
    lineup.add_ppl_means(row, all[head])
  end
  return row
end

-- The columns of an "A vs B" table of rank-sum tests on test ppl (rows from lineup.ranksum_row;
-- the paper's numbers, where published, go in paper_a, paper_a_sd, paper_b, paper_b_sd, p_paper, and
-- the conference paper's t-test p-value in t_p_paper).
function lineup.ranksum_columns()
  return lineup.join({
    {key = "comparison", label = "A vs B"}, {key = "n", label = "Seeds (A/B)"},
    {key = "a", label = "Test ppl A", digits = 2, sd = "a_sd", paper = "paper_a"},
    {key = "b", label = "Test ppl B", digits = 2, sd = "b_sd", paper = "paper_b"},
    {key = "paper_a_sd", label = "sd A (paper)", digits = 2}, {key = "paper_b_sd", label = "sd B (paper)", digits = 2},
  }, lineup.p_columns())
end

-- The p-value columns of a test table: the thesis's two-sided Wilcoxon rank-sum test, whether it
-- is significant, and the conference paper's unpaired t-test (its numbers in t_p_paper).
function lineup.p_columns()
  return {
    {key = "p_paper", label = "Rank-sum p (thesis)", format = "%.2e"}, {key = "p", label = "Rank-sum p (ours)", format = "%.2e"},
    {key = "significant", label = "Significant at 0.05 (ours)"},
    {key = "t_p_paper", label = "t-test p (AAAI paper)", format = "%.2e"}, {key = "t_p", label = "t-test p (ours)", format = "%.2e"},
  }
end

-- Sets row.p and row.significant from the rank-sum test of two samples, and row.t_p from the
-- unpaired t-test (left unset where a test says nothing: fewer than 2 values on a side).
function lineup.add_p(row, a, b)
  local p = lineup.ranksums_p(a, b)
  if p then row.p, row.significant = p, p < 0.05 and "yes" or "no" end
  row.t_p = lineup.ttest_p(a, b)
  return row
end

-- A row of the ranksum_columns table: test ppl mean ± sd of two lists of results (the sampled
-- seeds) and the p-value between them.
function lineup.ranksum_row(label_a, label_b, a, b)
  local ma, sa, na, va = lineup.sample(a, "test_ppl")
  local mb, sb, nb, vb = lineup.sample(b, "test_ppl")
  local row = {comparison = label_a .. " vs " .. label_b, n = ("%d/%d"):format(na, nb),
               a = ma, a_sd = sa, b = mb, b_sd = sb}
  return lineup.add_p(row, va, vb)
end

-- Places 1, 2, ... by ascending value of name → value (ties share the better place); names
-- without a value get none.
function lineup.places(values)
  local order = {}
  for name, v in pairs(values) do order[#order + 1] = {name = name, v = v} end
  table.sort(order, function(a, b) return a.v < b.v end)
  local place = {}
  for i, e in ipairs(order) do
    place[e.name] = (i > 1 and order[i - 1].v == e.v) and place[order[i - 1].name] or i
  end
  return place
end

-- Prints a report table and writes it as <out>/<name>.{md,csv,tex} (presets/report_files.lua).
lineup.print_and_save = report_files.print_and_save

return lineup

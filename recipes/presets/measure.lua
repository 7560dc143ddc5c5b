-- What chapter 5's tables measure on a trained model, shared by the MoS, flooding and AdvSoft
-- recipes: train perplexity (the training loop's at the best epoch, SPEC §2), test perplexity, the
-- Press rank of its logP matrix on the test split, the parameter count; plus the report plumbing
-- they share (cell limits, paper columns, report tables by `table`, files, rank correlations).
--   local measure = require "presets.measure"
--   local r = measure.model{model = model, corpus = corpus, preset = p, summary = summary,
--                           eval_train_tokens = 0, max_contexts = -1}
--   -- r = {params=, train_ppl=, valid_ppl=, test_ppl=, rank=, contexts=, vocab=, rank_method=}
local presets = require "presets.awd_lstm"
local report_files = require "presets.report_files"
local measure = {}

-- The thesis's logP matrices: all of PTB's test contexts, the first 33,320 of WikiText-2's (SPEC §3).
measure.thesis_contexts = {ptb = 0, ["wikitext-2"] = 33320}

-- The contexts a rank uses: setting −1 = as the thesis did for this dataset, 0 = all, n > 0 = n.
function measure.contexts(setting, dataset)
  if setting < 0 then setting = measure.thesis_contexts[dataset] or 0 end
  return setting > 0 and setting or nil
end

-- Perplexity on the training split as a language model is evaluated (dropout off, state carried,
-- eval batch size): not the thesis's "Train ppl" (measure.model), an extra measurement.
-- max_tokens > 0 reads only the first max_tokens tokens (PTB's 929k and WT2's 2.1M tokens take a
-- few minutes on a GPU).
function measure.train_ppl(model, corpus, preset, max_tokens)
  local tokens = corpus.train
  if max_tokens and max_tokens > 0 and max_tokens < tokens:size(1) then tokens = tokens:narrow(1, 1, max_tokens) end
  return lmkit.evaluate(model, tokens, {batch_size = preset.train.eval_batch_size, bptt = preset.train.bptt}).ppl
end

-- Press rank (float32's eps, SPEC §3) of the test split's logP matrix: rank, contexts, vocabulary,
-- and the method that decomposed Q — the thesis's thin SVD of the whole matrix when Q fits in
-- memory, else a streaming QR (lmkit.analysis.logp_svdvals's method = "auto").
function measure.rank(model, corpus, max_contexts)
  local sv, rows, cols, method = lmkit.analysis.logp_svdvals(model, corpus.test, {batch_size = 1, max_contexts = max_contexts})
  return lmkit.analysis.press_rank(sv, rows, cols), rows, cols, method
end

-- The note under a report that ranks: what Q was (contexts × words of which split) and how it was
-- decomposed, from the results themselves (cells may differ, e.g. one ran out of memory for the SVD).
-- nil when no result has a rank.
function measure.rank_note(results, dataset)
  local seen, parts = {}, {}
  for _, r in ipairs(results) do
    local x = r.result
    if x and x.rank and x.contexts then
      local key = ("%d contexts × %d words, %s"):format(x.contexts, x.vocab or 0, x.rank_method or "method not recorded")
      if not seen[key] then seen[key] = true; parts[#parts + 1] = key end
    end
  end
  if #parts == 0 then return nil end
  local thesis = measure.thesis_contexts[dataset]
  local as_thesis = thesis == nil and "" or thesis > 0 and (" (the thesis: the first %d contexts)"):format(thesis)
                    or " (the thesis: all its contexts)"
  return ("Rank: Press rank (float32 eps) of Q = log P(·|context) on the test split, batch 1, bptt 70%s: %s."):format(
    as_thesis, table.concat(parts, "; "))
end

-- Adds measure.rank_note's note to report table t, when the results have ranks.
function measure.note_rank(t, results, dataset)
  local note = measure.rank_note(results, dataset)
  if note then t:note(note) end
end

-- Everything the tables report for one trained model, from its run's `summary`:
--   train_ppl  the thesis's "train ppl" (SPEC §2): the training loop's loss (dropout and every
--              training-time perturbation on) at the epoch with the best validation perplexity,
--              or with o.at_last (a model measured at its last.ckpt) at the last epoch;
--   valid_ppl, test_ppl  of the best checkpoint, or with o.at_last evaluated here;
--   train_ppl_eval  (only with o.eval_train_tokens ≠ 0) an extra: the model evaluated on the
--              training split with dropout off, its first eval_train_tokens tokens (−1: all);
--   rank       Press rank of the test split's logP matrix (rank = false skips it).
function measure.model(o)
  local model, corpus, p, s = o.model, o.corpus, o.preset, o.summary
  assert(s, "measure.model: the run's summary is required")
  local r = {params = model:parameter_count().total}
  if o.at_last then
    r.train_ppl = s.last_train_ppl
    r.valid_ppl = lmkit.evaluate(model, corpus.valid, {batch_size = p.train.eval_batch_size, bptt = p.train.bptt}).ppl
    r.test_ppl = lmkit.evaluate(model, corpus.test, {batch_size = p.train.test_batch_size, bptt = p.train.bptt}).ppl
  else
    r.train_ppl, r.valid_ppl, r.test_ppl = s.train_ppl, s.valid_ppl, s.test_ppl
  end
  if (o.eval_train_tokens or 0) ~= 0 then
    r.train_ppl_eval = measure.train_ppl(model, corpus, p, o.eval_train_tokens > 0 and o.eval_train_tokens or nil)
  end
  if o.rank ~= false then r.rank, r.contexts, r.vocab, r.rank_method = measure.rank(model, corpus, o.max_contexts) end
  return presets.with_yardsticks(r, corpus)
end

-- The model at the end of training (the run's last.ckpt, raw weights), on the trained model's device.
function measure.last_model(run_dir, like)
  local model = lmkit.load(run_dir .. "/last.ckpt")
  local device = like and like:parameters()[1]:device()
  if device and device ~= "cpu" then model:to(device) end
  return model
end

-- The paper's values of one key over the report's rows (cells carry them as cell.paper), or nil
-- when no row has one (a grid beyond the paper's).
function measure.paper(results, key)
  local values, any = {}, false
  for i, r in ipairs(results) do
    values[i] = r.cell.paper and r.cell.paper[key]
    any = any or values[i] ~= nil
  end
  return any and values or nil
end

-- Prints a report table and writes it as <out>/<name>.{md,csv,tex} (presets/report_files.lua).
measure.print_and_save = report_files.print_and_save
-- "report files: <out>/{name,...}.{md,csv,tex}" for a report of several tables.
measure.print_report_names = report_files.print_names

-- A parameter count in millions as the thesis's tables print it: truncated to two decimals
-- (19,057,620 → "19.05", not the rounded 19.06). A format= function for lmkit.report.table.
function measure.millions(value)
  return ("%.2f"):format(math.floor(value * 100 + 1e-7) / 100)
end

-- The `limit` setting of the grid recipes: > 0 keeps only the first `limit` cells (a quick check of
-- the pipeline, or the tests); 0 keeps them all.
function measure.limit(cells, limit)
  while limit > 0 and #cells > limit do table.remove(cells) end
  return cells
end

-- One cell of a chapter-5 table from its head alone: the `family` preset ("awd", "mos") at the
-- recipe's scale and dataset, its epochs overridden by the settings (presets.train_overrides), with
-- head `head` (presets.head options `head_options`) trained into `dir`, then measured (measure.model)
-- with the recipe's eval_train_tokens and max_contexts settings.
--   measure.train_and_measure{cfg = ctx.cfg, family = "mos", head = "mos", head_options = {K = 5}, dir = ...}
function measure.train_and_measure(o)
  local cfg = o.cfg
  local p = presets.resolve{family = o.family, dataset = cfg.dataset, scale = cfg.scale}
  local model, summary, corpus = presets.train_cell{preset = p, head = presets.head(p, o.head, o.head_options),
                                                    dir = o.dir, train = presets.train_overrides(cfg)}
  return measure.model{model = model, corpus = corpus, preset = p, summary = summary,
                       eval_train_tokens = cfg.eval_train_tokens,
                       max_contexts = measure.contexts(cfg.max_contexts, cfg.dataset)}
end

-- The results of a recipe that reports several tables, grouped by the cells' `table` field:
-- groups[name] = its results in grid order, order = the names in order of first appearance (the
-- tables print in that order).
function measure.by_table(results)
  local groups, order = {}, {}
  for _, r in ipairs(results) do
    local name = r.cell.table
    if not groups[name] then groups[name] = {}; order[#order + 1] = name end
    table.insert(groups[name], r)
  end
  return groups, order
end

-- Pearson r between the rank and each perplexity, ours and the paper's, over the rows that have
-- both (the thesis's point is their sign: rank tracks train ppl, not test ppl). Prints and returns
-- {{metric=, ours=, paper=}, ...}.
function measure.rank_correlations(results, metrics)
  local out = {}
  local function r_of(ranks, values)
    if #ranks < 3 then return nil end
    local varies_r, varies_v = false, false
    for i = 2, #ranks do
      varies_r = varies_r or ranks[i] ~= ranks[1]
      varies_v = varies_v or values[i] ~= values[1]
    end
    if not (varies_r and varies_v) then return nil end
    return (lmkit.stats.pearsonr(ranks, values))
  end
  for _, metric in ipairs(metrics or {"train_ppl", "test_ppl"}) do
    local ours_rank, ours_v, paper_rank, paper_v = {}, {}, {}, {}
    for _, r in ipairs(results) do
      if r.result and r.result.rank and r.result[metric] then
        ours_rank[#ours_rank + 1], ours_v[#ours_v + 1] = r.result.rank, r.result[metric]
      end
      local p = r.cell.paper
      if p and p.rank and p[metric] then paper_rank[#paper_rank + 1], paper_v[#paper_v + 1] = p.rank, p[metric] end
    end
    local entry = {metric = metric, ours = r_of(ours_rank, ours_v), paper = r_of(paper_rank, paper_v)}
    local function show(v) return v and ("%+.3f"):format(v) or "n/a" end
    print(("Pearson r(rank, %s): ours %s, paper %s"):format(metric, show(entry.ours), show(entry.paper)))
    out[#out + 1] = entry
  end
  return out
end

return measure

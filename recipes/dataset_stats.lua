-- The statistics of the corpora (thesis §4.3.1, Table 4.2): tokens per split, vocabulary size and
-- the share of <unk> and <eos> tokens, for PTB and WikiText-2 as Merity et al. released them.
--
--   lmkit run recipes/dataset_stats.lua                           -- every dataset found
--   lmkit run recipes/dataset_stats.lua --set datasets=ptb --set data=/data/corpora
--
-- One cell per dataset. Where a corpus folder has train.txt the full protocol is read and the
-- numbers are the thesis's own to compare (Δ); where it has only valid.txt and test.txt (as the
-- development data does) the mini protocol is read, the report says so and shows no Δ. The thesis
-- does not say over which tokens its percentages are taken: here they are over all three splits
-- together, and also per split in the CSV (a choice, also in docs/recipes.md).
local recipe = require "lmkit.recipe"
local chapter5 = require "presets.chapter5"
local report_files = require "presets.report_files"

-- Thesis Table 4.2.
local PAPER = {
  ptb = {train = 929589, valid = 73760, test = 82430, vocab = 10000, unk = 4.91, eos = 4.53},
  ["wikitext-2"] = {train = 2088628, valid = 217646, test = 245569, vocab = 33278, unk = 3.20, eos = 1.76},
}
local LABEL = {ptb = "PTB", ["wikitext-2"] = "WT2"}

return recipe.define{
  name = "dataset_stats",
  description = "Corpus statistics: tokens per split, vocabulary, % <unk>, % <eos> (thesis Table 4.2)",
  settings = {
    datasets = recipe.setting("ptb,wikitext-2", "which corpora"),
    data = recipe.setting("", "the data folder; \"\" looks in $LMKIT_DATA, ./data, $LMKIT_TEST_DATA, ../shared/data"),
    scale = recipe.setting("data", "(names the output folder: runs/dataset_stats-data)"),
  },

  grid = function(cfg)
    local cells = {}
    for name in tostring(cfg.datasets):gmatch("[^,%s]+") do
      if not PAPER[name] then
        error(("dataset_stats: unknown dataset '%s' (ptb, wikitext-2)"):format(name))
      end
      cells[#cells + 1] = {dataset = name}
    end
    return cells
  end,

  run = function(cell, ctx)
    local folder = chapter5.data_dir(ctx.cfg.data, cell.dataset)
    local protocol = lmkit.fs.exists(folder .. "/train.txt") and "full" or "mini"
    local corpus = lmkit.data.corpus{name = cell.dataset, path = folder, protocol = protocol}
    local unk, eos = corpus.vocab:id("<unk>"), corpus.vocab:id("<eos>")
    local result = {protocol = protocol, vocab = corpus.vocab:size(), total = 0, unk_count = 0, eos_count = 0}
    for _, split in ipairs{"train", "valid", "test"} do
      local tokens = corpus[split]
      local n = tokens:numel()
      local n_unk = unk and (tokens:eq(unk)):sum():item() or 0
      local n_eos = eos and (tokens:eq(eos)):sum():item() or 0
      result[split] = n
      result[split .. "_unk"] = n > 0 and 100 * n_unk / n or nil
      result[split .. "_eos"] = n > 0 and 100 * n_eos / n or nil
      result.total, result.unk_count, result.eos_count = result.total + n, result.unk_count + n_unk, result.eos_count + n_eos
    end
    result.unk = 100 * result.unk_count / result.total
    result.eos = 100 * result.eos_count / result.total
    return result
  end,

  report = function(results, ctx)
    local names = {}
    for _, r in ipairs(results) do
      local paper = PAPER[r.cell.dataset]
      local full = r.result and r.result.protocol == "full"
      local label = LABEL[r.cell.dataset]
      local t = lmkit.report.table{
        title = ("Statistics of %s (thesis Table 4.2)"):format(label),
        data = {label = full and (label .. ", as released by Merity et al. (train, valid and test)")
                  or (label .. "'s mini protocol: train = the first 90% of valid.txt's lines, valid = the rest "
                      .. "(the train split is not in the data folder)"),
                paper_data = full or false, paper_label = label},
        columns = {{key = "statistic", label = "Statistic"},
                   {key = "value", label = "Value", paper = "paper", format = function(v, row)
                     return row.percent and ("%.2f"):format(v) or ("%d"):format(math.tointeger(v) or v)
                   end}},
      }
      local function row(statistic, key, paper_key, percent)
        t:add{statistic = statistic, value = r.result and r.result[key], paper = paper[paper_key or key], percent = percent}
      end
      row("tokens in the training set", "train")
      row("tokens in the validation set", "valid")
      row("tokens in the test set", "test")
      row("vocabulary size", "vocab")
      row("% <unk> tokens (all splits)", "unk", nil, true)
      row("% <eos> tokens (all splits)", "eos", nil, true)
      if r.result then
        t:note(("Per split, %% <unk>: train %.2f, valid %.2f, test %.2f; %% <eos>: train %.2f, valid %.2f, test %.2f.")
          :format(r.result.train_unk or 0, r.result.valid_unk or 0, r.result.test_unk or 0,
                  r.result.train_eos or 0, r.result.valid_eos or 0, r.result.test_eos or 0))
      end
      local name = "report_" .. r.cell.dataset
      report_files.print_and_save(t, ctx.out, name)
      names[#names + 1] = name
    end
    report_files.print_names(ctx.out, names)
  end,
}

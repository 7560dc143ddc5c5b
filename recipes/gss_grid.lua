-- GSS grid (thesis §4.4.1, Tables 4.4/4.5, Fig. 4.6/4.7): AWD-LSTM-GSS(c, k) models of diverse
-- ranks, and how weakly their rank predicts their perplexity (Pearson r ≈ 0.48 PTB, 0.53 WT2).
--
--   lmkit run recipes/gss_grid.lua                                  -- tiny scale (minutes on a CPU)
--   lmkit run recipes/gss_grid.lua --set scale=paper --set dataset=wikitext-2
--   lmkit run recipes/gss_grid.lua --set cells=full                 -- the whole grid, not the 15 cells
--
-- Each cell trains one model (lmkit.train, its run folder under <out>/cells/<id>), then computes
-- the Press rank of its logP matrix on the test split: as the thesis, all of PTB's contexts and
-- WT2's first 33,320 (max_contexts=0: WT2's whole split), by one thin SVD of Q when it fits in
-- memory, else a streaming QR (the report names which). The report prints the paper's numbers
-- beside ours, writes report.md/.csv/.tex and the rank-vs-perplexity plot into <out>.
local recipe = require "lmkit.recipe"
local presets = require "presets.awd_lstm"
local measure = require "presets.measure"

-- c, k, validation ppl, test ppl, rank as published.
local PAPER = {
  ptb = {
    {-2.00, 1.25, 59.57, 57.22, 1694}, {2.00, 2.50, 60.75, 58.04, 2052}, {2.00, 1.25, 59.36, 56.94, 2169},
    {1.50, 1.25, 59.49, 57.07, 2381}, {1.00, 2.75, 61.63, 58.26, 2498}, {0.00, 3.00, 61.92, 58.48, 2969},
    {1.50, 1.50, 59.46, 57.14, 3363}, {0.50, 1.50, 59.41, 56.88, 4525}, {0.00, 1.75, 59.26, 56.83, 5798},
    {-1.00, 2.50, 59.73, 56.99, 6798}, {-1.50, 2.00, 59.64, 57.07, 7507}, {-1.00, 2.25, 59.47, 57.21, 8064},
    {-1.50, 2.50, 59.36, 56.78, 8989}, {-1.50, 2.75, 59.32, 56.92, 9257}, {-2.00, 3.00, 59.44, 57.04, 9473},
  },
  ["wikitext-2"] = {
    {2.00, 2.25, 68.53, 65.63, 1747}, {2.00, 3.00, 69.59, 66.82, 1855}, {1.50, 2.50, 68.86, 65.73, 1936},
    {1.50, 3.00, 69.70, 66.50, 2047}, {2.00, 2.00, 67.37, 64.30, 2272}, {0.00, 3.00, 70.23, 66.89, 2857},
    {-1.50, 1.50, 67.32, 64.54, 3365}, {1.00, 2.00, 67.13, 64.27, 4622}, {-2.00, 2.00, 67.46, 64.74, 5603},
    {0.00, 2.50, 67.29, 64.51, 6989}, {-2.00, 2.50, 67.59, 64.68, 7620}, {-1.50, 2.50, 67.12, 64.43, 8479},
    {-2.00, 3.00, 67.15, 64.61, 9359}, {-1.50, 3.00, 66.96, 64.37, 10145}, {-1.00, 3.00, 67.48, 64.55, 10285},
  },
}

return recipe.define{
  name = "gss_grid",
  description = "AWD-LSTM-GSS(c, k): rank vs perplexity (thesis Tables 4.4/4.5, Fig. 4.6/4.7)",
  settings = presets.settings{"scale", "dataset", "corpus", "init_from", "epochs", "switch", "switch_epoch",
    cells = recipe.setting("paper", "paper: the 15 published (c, k); full: the whole searched grid"),
    max_contexts = recipe.setting(-1, "rank's test contexts: -1 as the thesis (PTB all, WT2 the first 33,320), 0 all, n"),
    limit = recipe.setting(0, "> 0: only the first `limit` cells (a quick check of the pipeline)"),
  },

  grid = function(cfg)
    local cells = {}
    if cfg.cells == "paper" then
      local rows = PAPER[cfg.dataset] or error("gss_grid: no published table for dataset '" .. cfg.dataset .. "'")
      for _, p in ipairs(rows) do
        cells[#cells + 1] = {c = p[1], k = p[2], paper = {valid_ppl = p[3], test_ppl = p[4], rank = p[5]}}
      end
    elseif cfg.cells == "full" then
      local ks = cfg.dataset == "ptb" and {1.25, 1.5, 1.75, 2, 2.25, 2.5, 2.75, 3} or {1.5, 2, 2.5, 3}
      for x = -4, 4 do
        for _, k in ipairs(ks) do cells[#cells + 1] = {c = 0.5 * x, k = k} end
      end
    else
      error("gss_grid: cells must be \"paper\" or \"full\", got '" .. tostring(cfg.cells) .. "'")
    end
    return measure.limit(cells, cfg.limit)
  end,

  run = function(cell, ctx)
    local cfg = ctx.cfg
    local p = presets.resolve{family = "awd", dataset = cfg.dataset, scale = cfg.scale, corpus = cfg.corpus}
    local model, summary, corpus = presets.train_cell{preset = p, head = presets.head(p, "gss", {c = cell.c, k = cell.k}),
                                                      dir = ctx.dir .. "/run", train = presets.train_overrides(cfg)}
    local rank, rows, cols, method = measure.rank(model, corpus, measure.contexts(cfg.max_contexts, cfg.dataset))
    return presets.with_yardsticks({valid_ppl = summary.valid_ppl, test_ppl = summary.test_ppl, contexts = rows,
                                    rank = rank, vocab = cols, rank_method = method}, corpus)
  end,

  report = function(results, ctx)
    local cfg = ctx.cfg
    local with_paper = cfg.cells == "paper"
    local function paper(key)
      if not with_paper then return nil end
      local values = {}
      for i, r in ipairs(results) do values[i] = r.cell.paper[key] end
      return values
    end
    local data = presets.data(cfg)
    local t = lmkit.report.table{
      title = ("AWD-LSTM-GSS on %s: rank of Q and perplexity (thesis Table %s)"):format(
        data.short, cfg.dataset == "ptb" and "4.4" or "4.5"),
      data = data,
      columns = {
        {key = "c", label = "c", digits = 2}, {key = "k", label = "k", digits = 2},
        {key = "valid_ppl", label = "Valid ppl", digits = 2, paper = paper("valid_ppl")},
        {key = "test_ppl", label = "Test ppl", digits = 2, paper = paper("test_ppl")},
        {key = "rank", label = "Rank", digits = 0, paper = paper("rank")},
      },
    }
    local ranks, ppls, names = {}, {}, {}
    for _, r in ipairs(results) do
      local row = {c = r.cell.c, k = r.cell.k}
      if r.result then
        row.valid_ppl, row.test_ppl, row.rank = r.result.valid_ppl, r.result.test_ppl, r.result.rank
        if r.result.rank and r.result.test_ppl then  -- a diverged cell has no point
          ranks[#ranks + 1], ppls[#ppls + 1] = r.result.rank, r.result.test_ppl
          names[#names + 1] = ("(%g, %g)"):format(r.cell.c, r.cell.k)
        end
      end
      t:add(row)
    end
    t:note(presets.switch_note(cfg))
    measure.note_rank(t, results, cfg.dataset)
    t:note_yardsticks(results)
    -- The correlation, and the plot, go under the table (report.md) as well as to the terminal.
    -- The paper's comparable r is over the same rows of Tables 4.4/4.5 (computed from them); the
    -- AAAI paper's Fig. 2 (0.48 PTB, 0.53 WT2) is over all grid models, named as such.
    if #ranks >= 3 then
      local rank_varies = false
      for i = 2, #ranks do rank_varies = rank_varies or ranks[i] ~= ranks[1] end
      if rank_varies then
        local plot_file = ctx.out .. "/rank_vs_ppl.png"
        local fit = lmkit.plot.rank_ppl{rank = ranks, ppl = ppls, out = plot_file, labels = names, label = "GSS(c, k)",
                                        title = ("GSS grid, %s"):format(data.short)}
        local paper_rows = with_paper and measure.rank_correlations(results, {"test_ppl"})[1].paper
        t:note(("Pearson r(rank, test ppl) = %.3f over %d models%s; the AAAI paper's Fig. 2 gives %s over all grid "
                .. "models%s."):format(fit.r, #ranks,
          paper_rows and (" (the paper's own numbers for these rows: %.2f)"):format(paper_rows) or "",
          cfg.dataset == "ptb" and "0.48" or "0.53", data.paper_data and "" or " (on the paper's data, not these)"))
        t:note("Plot: rank_vs_ppl.png")
      else
        t:note("All cells have the same rank at this scale: no correlation to report.")
      end
    end
    measure.print_and_save(t, ctx.out, "report")
    print("report files: " .. ctx.out .. "/report.{md,csv,tex}")
  end,
}

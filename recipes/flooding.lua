-- Flooding without regularization (thesis §5.4, Tables 5.8 and 5.10): every regularizer off (all
-- dropouts incl. MoS's, AR/TAR, weight decay) and flooding at b = 1.0, so that every model sits at
-- the same training loss and overfits. Then the rank of the test logP matrix rises with training
-- performance while test perplexity explodes (thousands): rank and test performance can be
-- negatively correlated. Table 5.8: AWD-LSTM-MoS on PTB, K ∈ {3, 5, 10, 15, 20}; Table 5.10:
-- AWD-LSTM-GSS(c, k) for the (c, k) of Table 5.9 (3 on PTB, 2 on WT2), whose regularized models
-- `--set regularized=true` trains too for the comparison the thesis draws.
--
--   lmkit run recipes/flooding.lua                                     -- tiny scale, PTB's cells
--   lmkit run recipes/flooding.lua --set scale=paper                   -- Tables 5.8 and 5.10 (PTB)
--   lmkit run recipes/flooding.lua --set scale=paper --set dataset=wikitext-2   -- Table 5.10 (WT2)
--   lmkit run recipes/flooding.lua --set part=gss --set regularized=true        -- + Table 5.9
--
-- Which model is measured: the thesis's train ppl ≈ e^b ≈ 2.9 and test ppl in the thousands can
-- only be the model at the end of training (the best-validation checkpoint of an overfitting run
-- is an early epoch), so flooded cells measure the run's last.ckpt (`checkpoint=best` for the
-- other reading); regularized cells measure the best checkpoint, as every other table.
local recipe = require "lmkit.recipe"
local presets = require "presets.awd_lstm"
local measure = require "presets.measure"

-- Table 5.8 (PTB): K, train ppl, test ppl, rank.
local PAPER_MOS = {
  {3, 2.90, 3153.96, 10000}, {5, 2.87, 2937.25, 10000}, {10, 2.90, 3183.86, 10000},
  {15, 2.88, 3071.22, 10000}, {20, 2.89, 2997.62, 10000},
}
-- Table 5.10 (flooded) and Table 5.9 (regularized): c, k, train ppl, test ppl, rank.
local PAPER_GSS = {
  flood = {
    ptb = {{-2.00, 1.25, 2.86, 3568.03, 7488}, {0.00, 1.50, 2.88, 4250.78, 9976}, {-2.00, 3.00, 2.86, 5027.36, 10000}},
    ["wikitext-2"] = {{1.00, 2.00, 2.86, 41782.87, 17059}, {-1.50, 3.00, 2.90, 37246.44, 24006}},
  },
  regularized = {
    ptb = {{-2.00, 1.25, 33.38, 57.22, 1694}, {0.00, 1.50, 33.41, 56.87, 4876}, {-2.00, 3.00, 33.72, 57.04, 9473}},
    ["wikitext-2"] = {{1.00, 2.00, 38.87, 64.27, 4622}, {-1.50, 3.00, 39.12, 64.38, 10145}},
  },
}

-- Every regularizer of the protocol off (the thesis: "We turned off all other regularization
-- techniques"); gradient clipping and the ASGD switch are optimization and stay.
local NO_REGULARIZATION = {
  model = {dropout = 0, dropouth = 0, dropouti = 0, dropoute = 0, wdrop = 0, alpha = 0, beta = 0},
  head = {dropoutl = 0},
  train = {wdecay = 0},
}

local function copy(t)
  local c = {}
  for k, v in pairs(t) do c[k] = v end
  return c
end

return recipe.define{
  name = "flooding",
  description = "No regularization + flooding b = 1.0: MoS K sweep and GSS (c, k), rank vs train/test ppl (thesis Tables 5.8, 5.10)",
  settings = presets.settings{"scale", "corpus", "init_from", "epochs", "switch", "switch_epoch",
    dataset = recipe.setting("ptb", "ptb (Tables 5.8 and 5.10) | wikitext-2 (Table 5.10 only)"),
    part = recipe.setting("all", "all | mos (Table 5.8) | gss (Table 5.10)"),
    flood = recipe.setting(1.0, "flood level b (training NLL held around b)"),
    regularized = recipe.setting(false, "also train the regularized GSS models of Table 5.9"),
    checkpoint = recipe.setting("last", "flooded cells: last (the model at the end of training) | best"),
    eval_train_tokens = recipe.setting(0, "≠ 0: also the eval-mode ppl on the training split's first N tokens (−1 all)"),
    max_contexts = recipe.setting(-1, "rank's test contexts: -1 as the thesis (WT2: first 33,320), 0 all, n"),
    limit = recipe.setting(0, "> 0: only the first `limit` cells"),
  },

  grid = function(cfg)
    if cfg.part ~= "all" and cfg.part ~= "mos" and cfg.part ~= "gss" then
      error("flooding: part must be \"all\", \"mos\" or \"gss\", got '" .. tostring(cfg.part) .. "'")
    end
    if cfg.checkpoint ~= "last" and cfg.checkpoint ~= "best" then
      error("flooding: checkpoint must be \"last\" or \"best\", got '" .. tostring(cfg.checkpoint) .. "'")
    end
    if not PAPER_GSS.flood[cfg.dataset] then error("flooding: no published table for dataset '" .. cfg.dataset .. "'") end
    local cells = {}
    -- Table 5.8 exists for PTB only
    if cfg.part ~= "gss" and cfg.dataset == "ptb" then
      for _, p in ipairs(PAPER_MOS) do
        cells[#cells + 1] = {table = "5.8", head = "mos", K = p[1], regime = "flood",
                             paper = {train_ppl = p[2], test_ppl = p[3], rank = p[4]}}
      end
    elseif cfg.part == "mos" then
      error("flooding: Table 5.8 (MoS) is on PTB only")
    end
    if cfg.part ~= "mos" then
      local regimes = cfg.regularized and {"flood", "regularized"} or {"flood"}
      for _, regime in ipairs(regimes) do
        for _, p in ipairs(PAPER_GSS[regime][cfg.dataset]) do
          cells[#cells + 1] = {table = regime == "flood" and "5.10" or "5.9", head = "gss", c = p[1], k = p[2],
                               regime = regime, paper = {train_ppl = p[3], test_ppl = p[4], rank = p[5]}}
        end
      end
    end
    return measure.limit(cells, cfg.limit)
  end,

  run = function(cell, ctx)
    local cfg = ctx.cfg
    local p = presets.resolve{family = cell.head == "mos" and "mos" or "awd", dataset = cfg.dataset, scale = cfg.scale, corpus = cfg.corpus}
    local flooded = cell.regime == "flood"
    local model_opts, train = {}, {}
    local head_opts = cell.head == "mos" and {K = cell.K} or {c = cell.c, k = cell.k}
    if flooded then
      model_opts, train = copy(NO_REGULARIZATION.model), copy(NO_REGULARIZATION.train)
      if cell.head == "mos" then head_opts.dropoutl = NO_REGULARIZATION.head.dropoutl end
      train.flood = cfg.flood
    end
    train = presets.train_overrides(cfg, train)
    local dir = ctx.dir .. "/run"
    local model, summary, corpus = presets.train_cell{preset = p, head = presets.head(p, cell.head, head_opts),
                                                      dir = dir, model = model_opts, train = train}
    local use_last = flooded and cfg.checkpoint == "last"
    local r = measure.model{model = use_last and measure.last_model(dir, model) or model, corpus = corpus, preset = p,
                            summary = summary, at_last = use_last, eval_train_tokens = cfg.eval_train_tokens,
                            max_contexts = measure.contexts(cfg.max_contexts, cfg.dataset)}
    r.checkpoint = use_last and "last" or "best"
    r.final_train_loss = summary.last_train_loss  -- last epoch's mean training NLL (what flooding holds near b)
    return r
  end,

  report = function(results, ctx)
    local cfg = ctx.cfg
    local groups, order = measure.by_table(results)
    local data = presets.data(cfg)
    local titles = {
      ["5.8"] = "Highly overfitting AWD-LSTM-MoS (no regularization, flooding b = %.2f) on %s (Table 5.8)",
      ["5.10"] = "Highly overfitting AWD-LSTM-GSS (no regularization, flooding b = %.2f) on %s (Table 5.10)",
      ["5.9"] = "Regularized AWD-LSTM-GSS (no flooding; b = %.2f does not apply) on %s (Table 5.9)",
    }
    local files = {["5.8"] = "report_mos", ["5.10"] = "report_gss", ["5.9"] = "report_gss_regularized"}
    local flood_ppl, at_flood, flooded_cells = math.exp(cfg.flood), 0, 0
    for _, name in ipairs(order) do
      local rs = groups[name]
      local first = name == "5.8" and {{key = "K", label = "#Mixture"}}
                    or {{key = "c", label = "c", digits = 2}, {key = "k", label = "k", digits = 2}}
      local columns = first
      for _, col in ipairs{{key = "train_ppl", label = "Train ppl"}, {key = "test_ppl", label = "Test ppl"}} do
        columns[#columns + 1] = {key = col.key, label = col.label, digits = 2, paper = measure.paper(rs, col.key)}
      end
      columns[#columns + 1] = {key = "rank", label = "Rank", digits = 0, paper = measure.paper(rs, "rank")}
      local t = lmkit.report.table{title = titles[name]:format(cfg.flood, data.short), data = data, columns = columns}
      for _, r in ipairs(rs) do
        local row = {K = r.cell.K, c = r.cell.c, k = r.cell.k}
        if r.result then
          row.train_ppl, row.test_ppl, row.rank = r.result.train_ppl, r.result.test_ppl, r.result.rank
          if r.cell.regime == "flood" then
            flooded_cells = flooded_cells + 1
            -- within 10% of e^b: the flood level was reached and held the training loss
            if r.result.train_ppl <= 1.1 * flood_ppl then at_flood = at_flood + 1 end
          end
        end
        t:add(row)
      end
      t:note(presets.switch_note(cfg))
      measure.note_rank(t, rs, cfg.dataset)
      t:note_yardsticks(rs)
      measure.print_and_save(t, ctx.out, files[name])
      measure.rank_correlations(rs)
      print()
    end
    if flooded_cells > 0 then
      print(("%d of %d flooded models reached the flood level (train ppl ≤ 1.1·e^b = %.2f)%s; flooded cells are measured at their %s checkpoint")
        :format(at_flood, flooded_cells, 1.1 * flood_ppl,
                at_flood < flooded_cells and " (flooding only acts on a model whose training loss gets down to b)" or "",
                cfg.checkpoint))
    end
    local names = {}
    for _, name in ipairs(order) do names[#names + 1] = files[name] end
    measure.print_report_names(ctx.out, names)
  end,
}

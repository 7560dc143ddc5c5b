-- Press rank vs ε-effective rank (thesis §5.5–5.6, Tables 5.11–5.15; AAAI paper Table 6, Fig. 7):
-- how robust the rank the softmax-bottleneck papers report is, and what it counts.
--
--   lmkit run recipes/press_robustness.lua                                  -- tiny scale (a few minutes on a CPU)
--   lmkit run recipes/press_robustness.lua --set epochs=1 --set heads=softmax,mos
--   lmkit run recipes/press_robustness.lua --set scale=paper --set dataset=wikitext-2   -- Q: WT2's first 33,320 contexts
--   lmkit run recipes/press_robustness.lua --set ladder=1e2,1,1e-2,1e-4 --set robust_eps_dtype=float32
--
-- One cell per head (Softmax, SS, GSS(−1.5, 2.5), LMS-PLIF, MoS: the rows of Tables 5.14/5.15).
-- Each trains its model (recipes/presets/chapter5.lua) and takes the singular values of its logP
-- matrix Q on the test split (lmkit.analysis.logp_svdvals: the thin SVD of Q when it fits in memory,
-- a streaming QR otherwise; the report names the method): Press rank and the ε-effective ranks for
-- ε = 1e-3, 1e-4, 1e-5, and the normalized spectrum σ/σ₁ (Fig. 7, thesis Fig. 5.9–5.12). The cell
-- of `robust_head` also runs the two robustness experiments on Q's first `robust_contexts` rows,
-- computed in float64 (the thesis: 10,000 × 10,000). As in the thesis, that is the MoS "of rank
-- 9,979 as seen in Table 4.6": the NT-ASGD MoS (MoS†, trained in a cell of its own), not the
-- ET-ASGD MoS of Tables 5.14/5.15 (9,983):
--   Alg. 5.1 keeps Q's top `keep` singular values, then factorizes and multiplies back 10 times
--            (Press rank, mean squared deviation from the first reconstruction: Table 5.11);
--   Alg. 5.2 adds Gaussian noise N(0, c/n²) — c/n² the variance, sd √c/n — for each c of the
--            ladder (Press rank and ε-effective ranks: Tables 5.12, 5.13).
-- At tiny scale the matrices are 6,000 × 200 (the synthetic language), so ranks are ≤ 200, and the
-- noise level at which Press rank leaves `keep` follows from its tolerance (the report prints it).
local recipe = require "lmkit.recipe"
local presets = require "presets.awd_lstm"
local chapter5 = require "presets.chapter5"
local measure = require "presets.measure"

-- Press rank and ε-effective ranks (ε = 1e-3, 1e-4, 1e-5) of Q on the test split:
-- thesis Table 5.14 (PTB) and Table 5.15 (WT2, first 33,320 contexts); AAAI paper Table 6.
local PAPER_RANKS = {
  ptb = {softmax = {402, 52, 201, 306}, ss = {4979, 100, 297, 1038}, gss = {8989, 100, 559, 3456},
         plif = {580, 50, 198, 335}, mos = {9983, 81, 1521, 6428}},
  ["wikitext-2"] = {softmax = {402, 27, 141, 274}, ss = {6590, 54, 249, 1201}, gss = {10145, 60, 391, 2988},
                    plif = {513, 29, 150, 287}, mos = {15738, 49, 773, 5982}},
}
-- MoS's Q of PTB's first 10,000 test contexts: Press rank 8,933 (thesis §5.5).
local PAPER_TRUNCATED_RANK = 8933
-- Table 5.11: Press rank and the error (×1e-28) after each of 10 refactorizations.
local PAPER_REFACTOR = {
  rank = {10, 10, 10, 10, 10, 10, 10, 10, 10, 10},
  error_e28 = {0.97, 0.99, 1.01, 1.05, 1.08, 1.10, 1.13, 1.17, 1.23, 1.28},
}
-- Table 5.12 (its three sub-tables merged; 1e-22 and 1e-24 appear in two, with the same ranks)
-- and Table 5.13 (c = 1e-20 … 1e-25: Press rank, ε-effective ranks for ε = 1e-3, 1e-4, 1e-5).
local PAPER_NOISE = {
  [1e-2] = {press = 10000}, [1e-4] = {press = 10000}, [1e-8] = {press = 10000}, [1e-16] = {press = 9998},
  [1e-20] = {press = 9899, e3 = 7, e4 = 10, e5 = 10}, [1e-21] = {press = 9681, e3 = 7, e4 = 10, e5 = 10},
  [1e-22] = {press = 9001, e3 = 7, e4 = 10, e5 = 10}, [1e-23] = {press = 6869, e3 = 7, e4 = 10, e5 = 10},
  [1e-24] = {press = 1159, e3 = 7, e4 = 10, e5 = 10}, [1e-25] = {press = 10, e3 = 7, e4 = 10, e5 = 10},
  [1e-26] = {press = 10}, [1e-28] = {press = 10}, [1e-32] = {press = 10},
}
local THESIS_LADDER = "1e-2,1e-4,1e-8,1e-16,1e-20,1e-21,1e-22,1e-23,1e-24,1e-25,1e-26,1e-28,1e-32"
local EPSILONS = {1e-3, 1e-4, 1e-5}
local EPS_OF = {float32 = 2.0 ^ -23, float64 = 2.0 ^ -52}

local function parse_ladder(text)
  local ladder = {}
  for item in tostring(text):gmatch("[^,%s]+") do
    ladder[#ladder + 1] = tonumber(item) or error("press_robustness: ladder entry '" .. item .. "' is not a number")
  end
  if #ladder == 0 then error("press_robustness: the ladder is empty") end
  return ladder
end

-- The paper's value for c (keys are the literal constants above; c from the ladder may differ in
-- the last bit, so match by relative distance).
local function paper_noise(c)
  for key, v in pairs(PAPER_NOISE) do
    if math.abs(key - c) <= 1e-9 * key then return v end
  end
  return nil
end

local function find(results, key)
  for _, r in ipairs(results) do
    if r.cell.model == key then return r.result end
  end
  return nil
end

return recipe.define{
  name = "press_robustness",
  description = "Press rank vs ε-effective rank per head; robustness of Press rank (thesis Tables 5.11–5.15, Fig. 7)",
  settings = chapter5.settings{
    heads = recipe.setting("softmax,ss,gss,plif,mos", "the models (presets/chapter5.lua: softmax ss gss plif mos moc ...)"),
    max_contexts = recipe.setting(-1, "Q's test contexts: -1 as the thesis (PTB all, WT2 the first 33,320), 0 all, n"),
    robust_head = recipe.setting("mos_nt", "whose Q the robustness experiments use (\"\" skips them): the thesis's Q is the "
                                 .. "MoS of rank 9,979 \"as seen in Table 4.6\", the NT-ASGD MoS (MoS†)"),
    robust_contexts = recipe.setting(10000, "its first rows (thesis: 10,000 × 10,000; 0: all)"),
    keep = recipe.setting(10, "singular values kept by Alg. 5.1/5.2"),
    iterations = recipe.setting(10, "refactorizations of Alg. 5.1"),
    ladder = recipe.setting("auto", "the c values of Alg. 5.2: \"thesis\" (Tables 5.12/5.13), \"auto\" (the thesis's "
                            .. "plus five around where Press's tolerance lies for this Q), or \"1e-2,1e-4,...\""),
    noise_seed = recipe.setting(0, "the seed of Alg. 5.2's Gaussian noise"),
    eps_dtype = recipe.setting("float32", "Press rank's eps for Q's ranks, Tables 5.14/5.15 (the reference's SVD ran in float32)"),
    robust_eps_dtype = recipe.setting("float64", "the eps of Alg. 5.1/5.2, Tables 5.11-5.13 (they ran in float64: errors ~1e-28)"),
  },

  grid = function(cfg)
    for _, key in ipairs{"eps_dtype", "robust_eps_dtype"} do
      if not EPS_OF[cfg[key]] then
        error(("press_robustness: %s must be float32 or float64, got '%s'"):format(key, tostring(cfg[key])))
      end
    end
    local cells = chapter5.model_cells(cfg)
    -- The robustness experiments' model trains in a cell of its own when it is not one of `heads`
    -- (the default: the NT-ASGD MoS beside the ET-ASGD line-up of Tables 5.14/5.15).
    if cfg.robust_head ~= "" then
      local listed = false
      for _, c in ipairs(cells) do listed = listed or c.model == cfg.robust_head end
      chapter5.model(cfg.robust_head)  -- an unknown name is an error naming the known ones
      if not listed then cells[#cells + 1] = {model = cfg.robust_head, robust_only = true} end
    end
    return cells
  end,

  run = function(cell, ctx)
    local cfg = ctx.cfg
    local model, summary, corpus = chapter5.train_model_cell(cell, ctx, false)
    local sv, rows, cols, method = lmkit.analysis.logp_svdvals(model, corpus.test, {
      batch_size = 1, max_contexts = measure.contexts(cfg.max_contexts, cfg.dataset)})
    local result = presets.with_yardsticks({test_ppl = summary.test_ppl, valid_ppl = summary.valid_ppl, contexts = rows, vocab = cols,
                    rank_method = method, press = lmkit.analysis.press_rank(sv, rows, cols, cfg.eps_dtype),
                    singular_values = sv:totable(), spectrum = lmkit.analysis.normalized_spectrum(sv):totable()}, corpus)
    for i, eps in ipairs(EPSILONS) do result["e" .. (i + 2)] = lmkit.analysis.effective_rank(sv, eps) end

    if cell.model == cfg.robust_head then
      -- float64, so that the reconstruction errors are those of float64 SVDs (Table 5.11: ~1e-28).
      local q = lmkit.analysis.logp_matrix(model, corpus.test, {batch_size = 1, dtype = "float64",
        max_contexts = cfg.robust_contexts > 0 and cfg.robust_contexts or nil})
      local m, n = q:size(1), q:size(2)
      if m < n then
        error(("press_robustness: Alg. 5.1/5.2 need m ≥ n; Q has %d contexts for %d words (raise robust_contexts)"):format(m, n))
      end
      local qsv = lmkit.analysis.svdvals(q)
      local robust = {rows = m, cols = n, press = lmkit.analysis.press_rank(qsv, m, n, cfg.robust_eps_dtype),
                      sigma_max = qsv:max():item(), refactor = {}, noise = {}}
      -- Press's tolerance for the rank-`keep` matrix (its σ₁ is Q's), and the noise level c at which
      -- the largest noise singular value (≈ sd·(√m + √n), sd = √c/n) crosses it: below, Press rank
      -- stays `keep`.
      robust.tolerance = 0.5 * math.sqrt(m + n + 1) * robust.sigma_max * EPS_OF[cfg.robust_eps_dtype]
      robust.critical_c = (robust.tolerance / (math.sqrt(m) + math.sqrt(n)) * n) ^ 2
      local ladder = parse_ladder((cfg.ladder == "thesis" or cfg.ladder == "auto") and THESIS_LADDER or cfg.ladder)
      if cfg.ladder == "auto" then
        for _, f in ipairs{10, 3, 1, 1 / 3, 1 / 10} do ladder[#ladder + 1] = robust.critical_c * f end
        table.sort(ladder, function(a, b) return a > b end)
      end
      for _, step in ipairs(lmkit.analysis.refactorization_robustness(q, {keep = cfg.keep, iterations = cfg.iterations,
                                                                           eps_dtype = cfg.robust_eps_dtype})) do
        robust.refactor[#robust.refactor + 1] = {iteration = step.iteration, press = step.press_rank, error = step.error}
      end
      for _, step in ipairs(lmkit.analysis.noise_robustness(q, ladder, {keep = cfg.keep, seed = cfg.noise_seed,
                                                                         eps_dtype = cfg.robust_eps_dtype})) do
        local row = {c = step.c, noise_sd = step.noise_sd, press = step.press_rank}
        for i, e in ipairs(step.effective) do row["e" .. (i + 2)] = e.rank end
        robust.noise[#robust.noise + 1] = row
      end
      result.robust = robust
    end
    return result
  end,

  report = function(results, ctx)
    local cfg = ctx.cfg
    local paper_ranks = PAPER_RANKS[cfg.dataset] or {}
    local data = presets.data(cfg)
    local files = {}
    local function save(t, name)
      for _, ext in ipairs{"md", "csv", "tex"} do t:save(ctx.out .. "/" .. name .. "." .. ext) end
      files[#files + 1] = name
    end

    -- Tables 5.14 / 5.15: Press rank vs ε-effective rank per head.
    local paper = {}
    for _, r in ipairs(results) do
      local p = paper_ranks[r.cell.model]
      if p then paper[chapter5.model(r.cell.model).label] = {press = p[1], e3 = p[2], e4 = p[3], e5 = p[4]} end
    end
    local ranks = lmkit.report.table{
      title = ("Rank of Q on the test split of %s: Press vs ε-effective (thesis Table %s)"):format(
        data.short, cfg.dataset == "ptb" and "5.14" or "5.15"),
      data = data,
      columns = {
        {key = "model", label = "Function"},
        {key = "press", label = "Press rank"},
        {key = "e3", label = "ε=1e-3"}, {key = "e4", label = "ε=1e-4"}, {key = "e5", label = "ε=1e-5"},
        {key = "test_ppl", label = "Test ppl", digits = 2, paper = false},
        {key = "contexts", label = "Contexts", paper = false},
      },
      paper = paper,
    }
    local series, raw_series = {}, {}
    for _, r in ipairs(results) do
      -- The robustness experiments' own model (MoS†) is not a row of Tables 5.14/5.15.
      if r.cell.robust_only then goto next_result end
      local label = chapter5.model(r.cell.model).label
      local row = {model = label}
      if r.result then
        for _, k in ipairs{"press", "e3", "e4", "e5", "test_ppl", "contexts"} do row[k] = r.result[k] end
        series[#series + 1] = {values = r.result.spectrum, label = label}
        raw_series[#raw_series + 1] = {values = r.result.singular_values, label = label}
      end
      ranks:add(row)
      ::next_result::
    end
    ranks:note(chapter5.switch_note(results, cfg))
    ranks:note_yardsticks(results)
    local methods, seen = {}, {}
    for _, r in ipairs(results) do
      local m = r.result and r.result.rank_method
      if m and not seen[m] then seen[m] = true; methods[#methods + 1] = m end
    end
    if #methods > 0 then
      ranks:note(("Q's singular values: %s; Press rank against %s's eps%s."):format(table.concat(methods, "; "),
        cfg.eps_dtype, cfg.eps_dtype == "float32" and " (the thesis computed Q's SVD in float32)" or ""))
    end
    ranks:print()
    save(ranks, "ranks")

    if #series > 0 then
      local longest = 0
      for _, sr in ipairs(series) do longest = math.max(longest, #sr.values) end
      -- Fig. 7 (AAAI) / thesis Fig. 5.10, 5.12: σ/σ₁ on a linear axis, first 500, y in [0, 0.2].
      lmkit.plot.spectrum{out = ctx.out .. "/normalized_spectrum.png", series = series, log = false,
                          key = "top right", xrange = {1, math.min(500, longest)}, yrange = {0, 0.2},
                          xlabel = "index i", ylabel = "σᵢ / σ₁",
                          title = ("Normalized singular values of Q, %s"):format(data.short)}
      -- Thesis Fig. 5.9 / 5.11: the raw singular values, the whole spectrum on a log axis.
      lmkit.plot.spectrum{out = ctx.out .. "/spectrum_log.png", series = raw_series, normalize = false, xlabel = "index i",
                          ylabel = "σᵢ", title = ("Singular values of Q, %s"):format(data.short)}
    end

    -- Tables 5.11–5.13: the robustness experiments on one head's Q.
    local robust_result = cfg.robust_head ~= "" and find(results, cfg.robust_head) or nil
    local robust = robust_result and robust_result.robust
    local robust_label = cfg.robust_head ~= "" and chapter5.model(cfg.robust_head).label or "-"
    local with_paper = cfg.dataset == "ptb" and cfg.robust_head == "mos_nt"  -- the thesis used PTB's NT-ASGD MoS
    if cfg.robust_head ~= "" and not robust then
      print(("robustness: the %s cell has no result yet"):format(robust_label))
    end
    if robust then
      print(("\n%s's Q, first %d contexts × %d words (float64): Press rank %d%s; σ₁ = %.4g, "
             .. "Press tolerance %.3g (eps of %s)"):format(robust_label, robust.rows, robust.cols, robust.press,
        with_paper and (" (thesis, 10,000 × 10,000: %d)"):format(PAPER_TRUNCATED_RANK) or "",
        robust.sigma_max, robust.tolerance, cfg.robust_eps_dtype))
      print(("noise of variance c/n² reaches that tolerance near c ≈ %.3g: below it Press rank stays at A₀'s"):format(
        robust.critical_c))
      if robust.press < cfg.keep then
        print(("note: Q's Press rank (%d) is below keep (%d), so A₀ (Q's top %d singular values) has Press rank %d"):format(
          robust.press, cfg.keep, cfg.keep, robust.press))
      end

      local refactor = lmkit.report.table{
        title = ("Robustness to SVD reconstruction errors, %s's Q on %s (thesis Table 5.11)"):format(robust_label, data.short),
        data = data,
        columns = {
          {key = "iteration", label = "Iteration"},
          {key = "press", label = "Rank", paper = with_paper and PAPER_REFACTOR.rank or false},
          {key = "error_e28", label = "Error ×1e-28", format = "%.3g",
           paper = with_paper and PAPER_REFACTOR.error_e28 or false},
        },
      }
      for _, s in ipairs(robust.refactor) do
        refactor:add{iteration = s.iteration, press = s.press, error_e28 = s.error * 1e28}
      end
      refactor:print()
      save(refactor, "refactorization")

      local function noise_paper(key)
        if not with_paper then return false end
        return function(row) local p = paper_noise(row.c) return p and p[key] end
      end
      local noise = lmkit.report.table{
        title = ("Robustness to Gaussian additive noise N(0, c/n²) (c/n² the variance), %s's Q on %s (thesis Tables 5.12, 5.13)"):format(
          robust_label, data.short),
        data = data,
        columns = {
          {key = "c", label = "c", format = "%.2g"},
          {key = "noise_sd", label = "sd = √c/n", format = "%.2e"},
          {key = "press", label = "Press rank", paper = noise_paper("press")},
          {key = "e3", label = "ε=1e-3", paper = noise_paper("e3")},
          {key = "e4", label = "ε=1e-4", paper = noise_paper("e4")},
          {key = "e5", label = "ε=1e-5", paper = noise_paper("e5")},
        },
      }
      for _, s in ipairs(robust.noise) do noise:add(s) end
      noise:print()
      save(noise, "noise")
    end
    print(("report files: %s/{%s}.{md,csv,tex}%s"):format(ctx.out, table.concat(files, ","),
      #series > 0 and (", plots: " .. ctx.out .. "/{normalized_spectrum,spectrum_log}.png") or ""))
  end,
}

-- Hidden size from outputs (Finlayson, Ren & Swayamdipta 2024; Carlini et al. 2024): given only a
-- model's log-probabilities for n > d contexts, its hidden size d can be read off their singular
-- values — a softmax head's log P spans d + 2 dimensions (the thesis's rank 402 for d = 400), and
-- the spectrum falls by orders of magnitude after the (d + 2)-th value. The thesis's rank tables,
-- read as a security property: heads that break the bottleneck (SigSoftmax, GSS, LMS-PLIF, MoS)
-- leave no such gap, so their d cannot be recovered this way.
--
--   lmkit run recipes/hidden_size.lua                                     -- tiny scale (minutes on a CPU)
--   lmkit run recipes/hidden_size.lua --set dims=8,16,24,32 --set heads=softmax,gss
--   lmkit run recipes/hidden_size.lua --set scale=paper --set dims=200,400
--
-- Cells: a Softmax model for each d of `dims` (emb = nhidlast = d), and each other head of `heads`
-- at the middle d. Each cell trains its model (recipes/presets/awd_lstm.lua), takes the singular
-- values of its logP matrix Q on the test split (all of PTB's contexts, WT2's first 33,320; thin
-- SVD when Q fits in memory) from the model in float64, and estimates d with
-- lmkit.analysis.hidden_size (the largest ratio σ_r/σ_{r+1}; d = r − 2, the decoder having a bias).
-- Not in the papers, our choices: Q in float64 (the outputs at full precision; a weakly trained
-- model's context signal is below float32's rounding noise), the estimator's min_gap (1e3: the
-- report gives every gap), and a mixture's "d" being its latent dimension (= emb).
--
-- Any model's outputs: with logits=PATH (a file lmkit.read_tensors reads — e.g. logits or
-- log-probabilities [contexts, words] that a user dumped from a model or an API) nothing is trained:
-- the matrix's Press rank (eps of the file's dtype; float32's for a float64 matrix that carries float32's
-- rounding noise, which is said; --set eps= chooses), ε-effective ranks and hidden size are reported.
--   lmkit run hidden_size --set logits=outputs.npy [--set entry=NAME] [--set kind=logits] [--set bias=false]
--                         [--set centred=true]
-- The estimate is d = r − 2 for log-probabilities of a model with a bias (log P = W h + b − log Z),
-- one less per term the matrix lacks: r − 1 for its logits, or for log-probabilities without a bias.
-- A model whose h leaves a final LayerNorm (GPT-2, lmkit's Transformer; not an RMSNorm, which does not
-- centre) has h centred: log P spans d + 1 dimensions with or without a bias, its logits d
-- (docs/analysis.md, "The rank bound"); centred=true says so. A trained model declares it itself
-- (m:output_centred()).
local recipe = require "lmkit.recipe"
local presets = require "presets.awd_lstm"
local lineup = require "presets.lineup"
local measure = require "presets.measure"
local report_files = require "presets.report_files"

-- The matrix of a file: the entry named, else the file's only 2-D entry.
local function file_matrix(cfg)
  local name = cfg.entry ~= "" and cfg.entry or nil
  if not name then
    local matrices, entries = {}, {}
    for _, e in ipairs(lmkit.list_tensors(cfg.logits)) do
      if #e.shape == 2 then matrices[#matrices + 1] = e.name end
      entries[#entries + 1] = ("%s [%s]"):format(e.name, table.concat(e.shape, ", "))
    end
    if #matrices == 0 then
      error(("hidden_size: '%s' holds no matrix (its entries: %s): the analysis needs an N×V matrix of logits or "
             .. "log-probabilities; save one reshaped to 2-D, e.g. t.reshape(-1, t.shape[-1]) in PyTorch"):format(
            cfg.logits, #entries > 0 and table.concat(entries, ", ") or "none"), 0)
    end
    if #matrices ~= 1 then
      error(("hidden_size: '%s' holds %d matrices (%s): name one with --set entry=NAME"):format(cfg.logits, #matrices,
            table.concat(matrices, ", ")), 0)
    end
    name = matrices[1]
  end
  local stored = lmkit.read_tensors(cfg.logits, {names = {name}})[name]
  if stored:dim() ~= 2 then error(("hidden_size: '%s' in '%s' is not a matrix"):format(name, cfg.logits), 0) end
  return stored, name
end

-- logits=PATH: one matrix's ranks and hidden size, nothing trained.
local function analyse_file(cfg)
  local stored, name = file_matrix(cfg)
  local started = lmkit.clock()
  local sv = lmkit.analysis.svdvals(stored:double())
  local seconds = lmkit.clock() - started
  local rows, cols = stored:size(1), stored:size(2)
  local e = lmkit.analysis.hidden_size(sv, {bias = cfg.bias, centred = cfg.centred, min_gap = cfg.min_gap})
  -- The estimator counts log P (d = r − 2 with a bias, r − 1 without or centred); logits lack its
  -- normalizer, one dimension less.
  local missing = cfg.kind == "logits" and 1 or 0
  -- Press rank's eps: the file's precision, unless a float64 matrix carries float32's rounding noise
  -- (computed in float32, stored as float64), whose float64 rank would count that noise.
  local float32_floor = stored:dtype() == "float64" and lmkit.analysis.has_float32_noise_floor(sv, rows, cols)
  local eps_dtype = cfg.eps
  if eps_dtype == "auto" then eps_dtype = (stored:dtype() == "float64" and not float32_floor) and "float64" or "float32" end
  return {entry = name, rows = rows, cols = cols, dtype = stored:dtype(), eps_dtype = eps_dtype, seconds = seconds,
          rank = lmkit.analysis.press_rank(sv, rows, cols, eps_dtype), float32_floor = float32_floor,
          rank_float32 = lmkit.analysis.press_rank(sv, rows, cols, "float32"),
          rank_float64 = lmkit.analysis.press_rank(sv, rows, cols, "float64"),
          signal = e.signal, gap = e.gap, found = e.found,
          estimated = e.hidden_size + missing,
          eps_ranks = {lmkit.analysis.effective_rank(sv, 1e-3), lmkit.analysis.effective_rank(sv, 1e-4),
                       lmkit.analysis.effective_rank(sv, 1e-5)},
          spectrum = lmkit.analysis.normalized_spectrum(sv):totable()}
end

local function file_report(results, ctx)
  local cfg = ctx.cfg
  local x = results[1] and results[1].result
  if not x then
    print("hidden_size: no result yet")
    return
  end
  local t = lmkit.report.table{
    title = ("Ranks and hidden size of %s"):format(cfg.logits),
    data = {label = ("%s of %s (%s [%d, %d])"):format(cfg.kind == "logits" and "logits" or "log-probabilities", cfg.logits,
                     x.entry, x.rows, x.cols), paper_data = false},
    columns = {
      {key = "rank", label = ("Press rank (eps of %s)"):format(x.eps_dtype)},
      {key = "e3", label = "ε-rank 1e-3"}, {key = "e4", label = "ε-rank 1e-4"}, {key = "e5", label = "ε-rank 1e-5"},
      {key = "signal", label = "r (largest gap after σ_r)", latex_label = "$r$ (largest gap after $\\sigma_r$)"}, {key = "gap", label = "σ_r / σ_r+1", latex_label = "$\\sigma_r/\\sigma_{r+1}$", format = "%.3g"},
      {key = "estimated", label = "d estimated"}, {key = "seconds", label = "SVD (s)", digits = 2},
    },
  }
  t:add{rank = x.rank, e3 = x.eps_ranks[1], e4 = x.eps_ranks[2], e5 = x.eps_ranks[3], signal = x.signal, gap = x.gap,
        estimated = x.found and x.estimated or nil, seconds = x.seconds}
  t:note(x.found and ("The spectrum falls by %.3g after σ_%d: the signature of a softmax bottleneck, d = %d (%s%s)."):format(
                       x.gap, x.signal, x.estimated, cfg.kind == "logits" and "logits: d = r − 1" or "log-probabilities: d = r − 2",
                       cfg.centred and ", h centred by a final LayerNorm: one less, bias or not" or (cfg.bias and "" or ", no bias: one less"))
                 or ("No gap of %g or more (the largest is %.3g after σ_%d): no bottleneck's signature; the outputs span " ..
                     "more dimensions than a softmax layer's d would give, or the contexts are fewer than d."):format(
                       cfg.min_gap, x.gap, x.signal))
  local eps_source = cfg.eps ~= "auto" and "as set (--set eps)"
                     or x.float32_floor and ("float32's: the file's %s matrix carries float32's rounding noise"):format(x.dtype)
                     or ("the file's %s"):format(x.dtype)
  t:note(("Press rank: singular values above 0.5·√(m+n+1)·σ_max·eps, eps of %s (%s); ε-rank: the smallest k " ..
          "holding 1 − ε of Σσ². Computed in float64."):format(x.eps_dtype, eps_source))
  if x.float32_floor then
    local warning = ("%s's %s matrix has float32's noise floor (singular values just under float32's Press tolerance, " ..
                     "far above float64's): it was computed in float32. Press rank %d with float32's eps, %d with " ..
                     "float64's, which counts rounding noise."):format(x.entry, x.dtype, x.rank_float32, x.rank_float64)
    t:note(warning)
    io.stderr:write("warning: " .. warning .. (cfg.eps == "auto" and " Counted with float32's eps." or "") .. "\n")
  end
  report_files.print_and_save(t, ctx.out, "report")
  local plot_file = ctx.out .. "/spectrum.png"
  lmkit.plot.spectrum{out = plot_file, values = lmkit.tensor(x.spectrum), normalize = false, ylabel = "σᵢ / σ₁",
                      title = ("Singular values of %s"):format(x.entry)}
  print("plot: " .. plot_file)
  print("report files: " .. ctx.out .. "/report.{md,csv,tex}")
end

return recipe.define{
  name = "hidden_size",
  description = "Hidden size from output log-probabilities: Softmax gives its d away, bottleneck-breaking heads do not",
  settings = presets.settings{"scale", "dataset", "epochs", "switch_epoch",
    dims = recipe.setting("8,16,24", "the Softmax models' d (emb = nhidlast)"),
    heads = recipe.setting("sigsoftmax,gss,plif,mos,mixtape", "other heads, each at the middle d of dims"),
    min_gap = recipe.setting(1000, "the ratio σ_r/σ_{r+1} that counts as a bottleneck's signature"),
    switch = recipe.setting("et", "the ASGD switch (SPEC §2): \"et\" or \"nt\""),
    max_contexts = recipe.setting(-1, "Q's test contexts: -1 as the thesis (PTB all, WT2 the first 33,320), 0 all, n"),
    logits = recipe.setting("", "a file of logits or log-probabilities [contexts, words]: analysed instead of training"),
    entry = recipe.setting("", "with logits: the matrix's entry (empty: the file's only matrix)"),
    kind = recipe.setting("logp", "with logits: \"logp\" (log-probabilities) or \"logits\""),
    bias = recipe.setting(true, "with logits: the model's output layer has a bias"),
    centred = recipe.setting(false, "with logits: the model's h leaves a final LayerNorm (GPT-2's ln_f; not an RMSNorm): log P spans d + 1 dimensions, bias or not"),
    eps = recipe.setting("auto", "with logits: Press rank's eps, \"float32\", \"float64\" or \"auto\" (the file's " ..
                                 "dtype; float32's for a float64 matrix with float32's noise floor)"),
  },

  grid = function(cfg)
    if cfg.logits ~= "" then
      if cfg.kind ~= "logp" and cfg.kind ~= "logits" then
        error(("hidden_size: kind must be \"logp\" or \"logits\", got %q"):format(cfg.kind), 0)
      end
      if cfg.eps ~= "auto" and cfg.eps ~= "float32" and cfg.eps ~= "float64" then
        error(("hidden_size: eps must be \"auto\", \"float32\" or \"float64\", got %q"):format(cfg.eps), 0)
      end
      return {{file = "matrix"}}
    end
    local dims = lineup.integers(cfg.dims, "hidden_size: dims")
    local cells = {}
    for _, d in ipairs(dims) do cells[#cells + 1] = {head = "softmax", d = d} end
    local middle = dims[(#dims + 1) // 2]
    for _, head in ipairs(lineup.list(cfg.heads)) do
      if head ~= "softmax" then cells[#cells + 1] = {head = head, d = middle} end
    end
    return cells
  end,

  run = function(cell, ctx)
    local cfg = ctx.cfg
    if cell.file then return analyse_file(cfg) end
    local p = lineup.preset(cell.head, cfg)
    -- d is the width the decoder's logits come from (lineup.sizes_at).
    local model, summary, corpus = presets.train_cell{preset = p, head = lineup.head(p, cell.head),
                                                      dir = ctx.dir .. "/run", model = lineup.sizes_at(cell.head, cell.d),
                                                      train = presets.train_overrides(cfg)}
    -- The outputs at full precision: the trained model in float64. In float32 a weakly trained
    -- model's context signal (σ_2.. of Q, ~1e-5·σ_1 after one tiny epoch) sits under the rounding
    -- noise (~1e-7·√(m+n)·σ_1) and no estimator sees it.
    model:double()
    local sv, rows, cols, method = lmkit.analysis.logp_svdvals(model, corpus.test, {
      batch_size = 1, dtype = "float64", max_contexts = measure.contexts(cfg.max_contexts, cfg.dataset)})
    -- The encoder says whether its output is centred (one dimension less: d = r − 1).
    local e = lmkit.analysis.hidden_size(sv, {bias = true, centred = model:output_centred(), min_gap = cfg.min_gap})
    return presets.with_yardsticks({test_ppl = summary.test_ppl, contexts = rows, vocab = cols, rank_method = method,
            rank = lmkit.analysis.press_rank(sv, rows, cols, "float64"), signal = e.signal, estimated = e.hidden_size,
            gap = e.gap, found = e.found, spectrum = lmkit.analysis.normalized_spectrum(sv):totable()}, corpus)
  end,

  report = function(results, ctx)
    local cfg = ctx.cfg
    if cfg.logits ~= "" then return file_report(results, ctx) end
    local data = presets.data(cfg)
    local t = lmkit.report.table{
      title = ("Hidden size from the log-probabilities alone, %s"):format(data.short),
      data = data,
      columns = {
        {key = "head", label = "Head"}, {key = "d", label = "d (true)"},
        {key = "rank", label = "Press rank (float64)"}, {key = "signal", label = "r (largest gap after σ_r)", latex_label = "$r$ (largest gap after $\\sigma_r$)"},
        {key = "gap", label = "σ_r / σ_r+1", latex_label = "$\\sigma_r/\\sigma_{r+1}$", format = "%.3g"},
        {key = "estimated", label = "d estimated (r − 2)"}, {key = "verdict", label = "Verdict"},
        {key = "test_ppl", label = "Test ppl", digits = 2},
      },
    }
    local softmax_total, softmax_exact = 0, 0
    local series = {}
    for _, r in ipairs(results) do
      local row = {head = lineup.label(r.cell.head), d = r.cell.d}
      local x = r.result
      if x then
        row.rank, row.signal, row.gap, row.test_ppl = x.rank, x.signal, x.gap, x.test_ppl
        row.estimated = x.found and x.estimated or nil
        if not x.found then
          row.verdict = "no signature"
        elseif x.estimated == r.cell.d then
          row.verdict = "d recovered"
        else
          row.verdict = ("gap, but d off by %+d"):format(x.estimated - r.cell.d)
        end
        if r.cell.head == "softmax" then
          softmax_total = softmax_total + 1
          if x.found and x.estimated == r.cell.d then softmax_exact = softmax_exact + 1 end
        end
        series[#series + 1] = {values = x.spectrum, label = ("%s d=%d"):format(row.head, r.cell.d)}
      end
      t:add(row)
    end
    t:note(("Softmax models whose d was recovered exactly: %d of %d. A gap counts as the signature when " ..
            "σ_r/σ_r+1 ≥ %g (min_gap)."):format(softmax_exact, softmax_total, cfg.min_gap))
    t:note(presets.switch_note(cfg, false))
    t:note_yardsticks(results)
    t:note("Q is computed from the trained model in float64 (the outputs at full precision) and its Press " ..
           "rank counted against float64's eps.")
    measure.print_and_save(t, ctx.out, "report")
    if #series > 0 then
      local plot_file = ctx.out .. "/spectra.png"
      lmkit.plot.spectrum{out = plot_file, series = series, xlabel = "index i", ylabel = "σᵢ / σ₁",
                          title = ("Singular values of Q per model, %s"):format(data.short)}
      print("plot: " .. plot_file)
    end
    print("report files: " .. ctx.out .. "/report.{md,csv,tex}")
  end,
}

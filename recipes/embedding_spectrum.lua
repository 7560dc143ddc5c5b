-- Spectra of the embedding matrix (thesis §5.3.2, Fig. 5.4–5.8): do AWD-LSTM models suffer from the
-- fast singular-value decay ("representation degeneration") seen in Transformers, and do the heads
-- that break the softmax bottleneck change it?
--
--   lmkit run recipes/embedding_spectrum.lua                            -- tiny scale: ptb-mini, small models
--   lmkit run recipes/embedding_spectrum.lua --set heads=softmax,mos --set epochs=1 --set lines=500
--   lmkit run recipes/embedding_spectrum.lua --set scale=paper --set models=runs/chapter5-models
--
-- One cell per model (Softmax, SS, GSS(−1.5, 2.5), LMS-PLIF, MoS, MoC), trained on real words
-- (recipes/presets/chapter5.lua; with --set models=DIR the models word_similarity trained are
-- reused). Each takes its tied embedding E [vocab, d]: the singular values of E (float64), and its
-- rows projected on their two leading principal directions (lmkit.analysis.projection_2d). The
-- thesis shows these as figures only, so the report has no paper column; it summarizes each
-- spectrum (how far σ falls from σ₁, how many σ carry 50% / 90% of Σσ) and the geometry a
-- degenerate embedding would show: the mean cosine similarity of two words' vectors and
-- ‖mean row‖ / mean ‖row‖, both near 0 when the vectors spread around the origin and near 1 when
-- they crowd into a narrow cone. Plots: the spectra of the d = 400 models (Fig. 5.4/5.5) and of MoS
-- and MoC (Fig. 5.6/5.7), normalized to σ₁ (spectrum_awd.png, spectrum_mixtures.png), and the 2-D
-- projection per model (Fig. 5.8: projection_<model>.png).
local recipe = require "lmkit.recipe"
local presets = require "presets.awd_lstm"
local chapter5 = require "presets.chapter5"

-- The figures' groups: models with the same embedding size d are drawn together.
local FIGURES = {
  {name = "spectrum_awd", figure = "Fig. 5.4/5.5", title = "Softmax, SS, GSS, LMS-PLIF",
   models = {softmax = true, ss = true, gss = true, plif = true}},
  {name = "spectrum_mixtures", figure = "Fig. 5.6/5.7", title = "MoS, MoC",
   models = {mos = true, moc = true, mos_nt = true, moc_nt = true}},
}

-- The smallest k with cumulative_share[k] ≥ share.
local function index_reaching(cumulative, share)
  for k, v in ipairs(cumulative) do
    if v >= share then return k end
  end
  return #cumulative
end

return recipe.define{
  name = "embedding_spectrum",
  description = "Singular values and 2-D projection of the embedding matrix per model (thesis Fig. 5.4–5.8)",
  settings = chapter5.settings{
    heads = recipe.setting("softmax,ss,gss,plif,mos,moc", "the models of Fig. 5.4–5.7 (presets/chapter5.lua)"),
    projection_points = recipe.setting(0, "> 0: plot only the first (most frequent) words"),
  },

  grid = function(cfg)
    return chapter5.model_cells(cfg)
  end,

  run = function(cell, ctx)
    local model, summary, corpus = chapter5.train_model_cell(cell, ctx, true)
    local E = lmkit.analysis.embedding(model):double()
    local n, d = E:size(1), E:size(2)
    local sv = lmkit.analysis.svdvals(E)
    -- Geometry around the origin (uncentered): mean cosine over pairs i ≠ j from the sum of the unit
    -- rows, (‖Σ uᵢ‖² − n) / (n(n − 1)); and the length of the mean row against the mean length.
    local norms = E:norm(2, 2, true)
    local unit_sum = E:div(norms):sum(1):norm():item()
    local projection = lmkit.analysis.projection_2d(E)
    return presets.with_yardsticks({
      valid_ppl = summary.valid_ppl, test_ppl = summary.test_ppl, vocab = n, emb = d,
      spectrum = lmkit.analysis.normalized_spectrum(sv):totable(),
      cumulative = lmkit.analysis.cumulative_share(sv):totable(),
      mean_cosine = (unit_sum * unit_sum - n) / (n * (n - 1)),
      mean_row_ratio = E:mean(1):norm():item() / norms:mean():item(),
      x = projection:select(2, 1):totable(), y = projection:select(2, 2):totable(),
    }, corpus)
  end,

  report = function(results, ctx)
    local cfg = ctx.cfg
    local data = presets.data(cfg, {words = true})
    local t = lmkit.report.table{
      title = ("Embedding matrices of models trained on %s (thesis Fig. 5.4–5.8 show no numbers)"):format(data.short),
      data = data,
      columns = {
        {key = "model", label = "Model"}, {key = "emb", label = "d"},
        {key = "mid", label = "σ_{d/2}/σ₁", latex_label = "$\\sigma_{d/2}/\\sigma_1$", digits = 3},
        {key = "last", label = "σ_d/σ₁", latex_label = "$\\sigma_d/\\sigma_1$", digits = 3},
        {key = "k50", label = "k: 50% of Σσ"}, {key = "k90", label = "k: 90% of Σσ"},
        {key = "mean_cosine", label = "mean cos", digits = 3},
        {key = "mean_row_ratio", label = "‖mean row‖/mean ‖row‖", digits = 3},
        {key = "valid_ppl", label = "Valid ppl", digits = 2},
      },
    }
    local series_of, projections = {}, {}
    for _, r in ipairs(results) do
      local label = chapter5.model(r.cell.model).label
      local row = {model = label}
      local res = r.result
      if res then
        local s = res.spectrum
        row.emb, row.mid, row.last = res.emb, s[math.max(1, res.emb // 2)], s[#s]
        row.k50, row.k90 = index_reaching(res.cumulative, 0.5), index_reaching(res.cumulative, 0.9)
        row.mean_cosine, row.mean_row_ratio, row.valid_ppl = res.mean_cosine, res.mean_row_ratio, res.valid_ppl
        series_of[r.cell.model] = {values = s, label = label}
        projections[#projections + 1] = {key = r.cell.model, label = label, x = res.x, y = res.y}
      end
      t:add(row)
    end
    t:note(chapter5.switch_note(results, ctx.cfg))
    t:note_yardsticks(results)
    t:print()
    for _, ext in ipairs{"md", "csv", "tex"} do t:save(ctx.out .. "/report." .. ext) end

    local plots = {}
    for _, fig in ipairs(FIGURES) do
      local series = {}
      for _, r in ipairs(results) do
        if fig.models[r.cell.model] and series_of[r.cell.model] then series[#series + 1] = series_of[r.cell.model] end
      end
      if #series > 0 then
        local out = ctx.out .. "/" .. fig.name .. ".png"
        lmkit.plot.spectrum{out = out, series = series, log = false, yrange = {0, 1}, xlabel = "index i",
                            ylabel = "σᵢ / σ₁", title = ("Spectrum of E: %s, %s (%s)"):format(
                              fig.title, data.short, fig.figure)}
        plots[#plots + 1] = out
      end
    end
    for _, p in ipairs(projections) do
      local x, y = p.x, p.y
      if cfg.projection_points > 0 and #x > cfg.projection_points then
        x, y = table.move(x, 1, cfg.projection_points, 1, {}), table.move(y, 1, cfg.projection_points, 1, {})
      end
      local out = ctx.out .. "/projection_" .. p.key .. ".png"
      lmkit.plot.projection{out = out, x = x, y = y, key = false, xlabel = "first principal direction",
                            ylabel = "second principal direction",
                            title = ("Embeddings of %s in 2-D, %s (Fig. 5.8)"):format(p.label, data.short)}
      plots[#plots + 1] = out
    end
    print("report files: " .. ctx.out .. "/report.{md,csv,tex}")
    if #plots > 0 then print("plots: " .. table.concat(plots, ", ")) end
  end,
}

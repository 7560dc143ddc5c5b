-- Bring your own model: the output layer of a model lmkit did not train — a released LLM's
-- unembedding, a published AWD-LSTM decoder — read from its weight file (safetensors, NumPy
-- .npy/.npz, torch.save), and asked the softmax bottleneck's questions: its vocabulary size N and
-- width d, the rank bound d + 1 of its logits (d without a bias), the decoder's spectrum, and which
-- words can never be the top-1 prediction (exact, by linear programs; Demeter et al. 2020, Grivas
-- et al. 2022), with h in the box [−bound, bound]^d and anywhere.
--
--   lmkit run output_layer                                           -- a random decoder (no download)
--   lmkit run output_layer --set weights=model.safetensors           -- lm_head.weight etc. found by name
--   lmkit run output_layer --set weights=awd.pt --set decoder=decoder.weight --set vocab=vocab.txt
--   lmkit run output_layer --set rows=50257 --set cols=768           -- GPT-2's shape, random (docs/benchmarks.md)
--
-- Without weights= the decoder is random (N(0, 1/d) entries, seed `seed`): a demonstration and a
-- benchmark, labelled so in the report, never a released model's result. The decoder is computed in
-- `dtype` (bfloat16/float16 weights are converted on reading; float32 by default). A vocabulary file
-- maps ids to tokens: one token per line (line i is id i − 1), or a JSON object token → id (GPT-2's
-- vocab.json). Our choices (the papers are silent): the tolerance (a best lead ≤ 1e-6 nats counts as
-- unargmaxable) and the box [−1, 1]^d (a tanh/LSTM output's range; a Transformer's final LayerNorm
-- output is not bounded so, hence the free region beside it).
--
-- What it proves: the exact method covers a single-softmax decoder, P = softmax(W·h + b). For a
-- mixture (MoS, MoC) the decoder W, b is what each component's softmax shares, and the words
-- reported are those no single component can rank first; a mixture of components can still rank
-- such a word first (an average of distributions can put on top a word that tops none of them), so
-- for a mixture this is no proof of unargmaxability. The report says so for every decoder;
-- lmkit.analysis.model_argmaxable(model, {tokens = ...}) checks a trained mixture on contexts.
local recipe = require "lmkit.recipe"
local lineup = require "presets.lineup"
local report_files = require "presets.report_files"

-- ids (0-based) → tokens, from a file of lines or a JSON object token → id.
local function read_vocabulary(path)
  local f, problem = io.open(path, "rb")
  if not f then error(("output_layer: cannot open the vocabulary '%s': %s"):format(path, problem), 0) end
  local text = f:read("a")
  f:close()
  local tokens = {}
  if path:match("%.json$") then
    local decoded = lmkit.json_decode(text)
    if type(decoded) ~= "table" then
      error(("output_layer: the vocabulary '%s' must be a JSON object token → id, got a %s"):format(path, type(decoded)), 0)
    end
    for token, id in pairs(decoded) do
      if math.type(id) ~= "integer" then error(("output_layer: '%s': the id of %q is not an integer"):format(path, token), 0) end
      tokens[id] = token
    end
  else
    local id = 0
    for line in (text:sub(-1) == "\n" and text or text .. "\n"):gmatch("([^\n]*)\n") do
      tokens[id] = line
      id = id + 1
    end
  end
  return tokens
end

local function some_tokens(ids, tokens, n)
  local shown = {}
  for k = 1, math.min(n, #ids) do
    local token = tokens and tokens[ids[k]]
    shown[k] = token and ("%q"):format(token) or ("#" .. ids[k])
  end
  if #ids > n then shown[#shown + 1] = ("… (%d in all)"):format(#ids) end
  return table.concat(shown, " ")
end

return recipe.define{
  name = "output_layer",
  description = "Your own model's output layer: N, d, rank bound, spectrum and unargmaxable words from its weight file",
  settings = {
    weights = recipe.setting("", "the weight file (safetensors, .npy, .npz, torch.save); empty: a random decoder of rows × cols"),
    decoder = recipe.setting("", "the decoder's entry [N, d]; empty: guessed (lm_head.weight, decoder.weight, wte.weight, ...)"),
    bias = recipe.setting("", "the bias's entry [N]; empty: the decoder's own if any; \"none\": no bias"),
    vocab = recipe.setting("", "a vocabulary file: one token per line, or JSON token → id; empty: ids are shown"),
    rows = recipe.setting(2000, "the random decoder's N (without weights)"),
    cols = recipe.setting(8, "the random decoder's d (without weights)"),
    seed = recipe.setting(1, "the random decoder's seed"),
    dtype = recipe.setting("float32", "the dtype the decoder is analysed in: \"float32\" or \"float64\""),
    regions = recipe.setting("box,free", "where h may lie: box ([−bound, bound]^d), free (ℝ^d)"),
    bound = recipe.setting(1, "the box's half-width"),
    tolerance = recipe.setting(1e-6, "a best lead at or below this (nats) counts as unargmaxable"),
    examples = recipe.setting(12, "unargmaxable tokens shown in the report"),
    centred = recipe.setting(false, "h leaves a final LayerNorm (GPT-2's ln_f, lmkit's Transformer; not an RMSNorm): the rank bound is one less with a bias"),
  },

  grid = function(cfg)
    local cells = {}
    for _, region in ipairs(lineup.list(cfg.regions)) do
      if region ~= "box" and region ~= "free" then
        error(("output_layer: region '%s' is not box or free"):format(region), 0)
      end
      cells[#cells + 1] = {region = region}
    end
    return cells
  end,

  run = function(cell, ctx)
    local cfg = ctx.cfg
    local weight, bias, source
    local started = lmkit.clock()
    if cfg.weights == "" then
      lmkit.seed(cfg.seed)
      weight = lmkit.randn(cfg.rows, cfg.cols, {dtype = cfg.dtype}):mul_(1 / math.sqrt(cfg.cols))
      source = {file = "", decoder = "random", how = ("N(0, 1/d) entries, seed %d"):format(cfg.seed)}
    else
      local found = lmkit.analysis.output_layer(cfg.weights, {decoder = cfg.decoder ~= "" and cfg.decoder or nil,
                                                              bias = cfg.bias ~= "" and cfg.bias or nil})
      local tensors = lmkit.read_tensors(cfg.weights, {names = {found.decoder, found.bias}, dtype = cfg.dtype})
      weight, bias = tensors[found.decoder], found.bias and tensors[found.bias]
      source = {file = cfg.weights, decoder = found.decoder, bias = found.bias, how = found.how}
    end
    local read_seconds = lmkit.clock() - started
    local N, d = weight:size(1), weight:size(2)
    started = lmkit.clock()
    local sv = lmkit.analysis.svdvals(weight:double())
    local svd_seconds = lmkit.clock() - started
    local r = lmkit.analysis.argmaxable(weight, bias, {region = cell.region, bound = cfg.bound, tolerance = cfg.tolerance})
    return {source = source, words = N, width = d, has_bias = bias ~= nil, read_seconds = read_seconds,
            svd_seconds = svd_seconds, sv_max = sv[1]:item(), sv_min = sv[sv:size(1)]:item(),
            effective_rank = lmkit.analysis.effective_rank(sv, 0.01), spectrum = lmkit.analysis.normalized_spectrum(sv):totable(),
            unargmaxable = r.unargmaxable, by_scan = r.by_scan, by_lp = r.by_lp, lp_solves = r.lp_solves, seconds = r.seconds}
  end,

  report = function(results, ctx)
    local cfg = ctx.cfg
    local first = results[1] and results[1].result
    if not first then
      print("output_layer: no result yet")
      return
    end
    local s = first.source
    local random = s.file == ""
    local label = random and ("a random decoder %d × %d (%s), not a released model"):format(first.words, first.width, s.how)
                         or ("the output layer of %s"):format(s.file)
    local tokens = cfg.vocab ~= "" and read_vocabulary(cfg.vocab) or nil
    local t = lmkit.report.table{
      title = ("Unargmaxable words of %s"):format(random and "a random decoder" or s.file),
      data = {label = label, paper_data = false},
      columns = {
        {key = "region", label = "h in"}, {key = "unargmaxable", label = "Unargmaxable"},
        {key = "percent", label = "% of words", digits = 3}, {key = "by_scan", label = "Certified by scan"},
        {key = "by_lp", label = "Decided by LP"}, {key = "lp_solves", label = "LP solves"},
        {key = "seconds", label = "Time (s)", digits = 1}, {key = "examples", label = "Examples"},
      },
    }
    for _, r in ipairs(results) do
      local x = r.result
      local row = {region = r.cell.region == "box" and ("[−%g, %g]^d"):format(cfg.bound, cfg.bound) or "ℝ^d (free)"}
      if x then
        row.unargmaxable, row.percent = #x.unargmaxable, 100 * #x.unargmaxable / x.words
        row.by_scan, row.by_lp, row.lp_solves, row.seconds = x.by_scan, x.by_lp, x.lp_solves, x.seconds
        row.examples = #x.unargmaxable > 0 and some_tokens(x.unargmaxable, tokens, cfg.examples) or "—"
      end
      t:add(row)
    end
    t:note(("Decoder: %s%s (%s), N = %d words, d = %d; bias: %s."):format(random and "" or "entry ", s.decoder, s.how,
           first.words, first.width, first.has_bias and s.bias or "none"))
    if not first.has_bias then
      t:note("Without a bias, scaling h does not change which word is the top-1: the box and ℝ^d give the same words.")
    end
    local bound = lmkit.analysis.rank_bound(first.width, first.has_bias, cfg.centred, true)
    t:note(("Rank bound (the softmax bottleneck): its logits over any number of contexts have rank ≤ %s = %d, " ..
            "its log-probabilities ≤ %d (− log Z adds one), whatever N is%s."):format(
            bound == first.width and "d" or "d + 1", bound, lmkit.analysis.rank_bound(first.width, first.has_bias, cfg.centred, false),
            cfg.centred and (" (h centred by a final LayerNorm, centred = true: its rows span d − 1 dimensions plus the " ..
              "LayerNorm's shift" .. (first.has_bias and ", which merges with the bias)" or ")"))
              or (first.has_bias and "" or " (no bias)")))
    t:note(("Decoder spectrum: σ_max = %.4g, σ_min = %.4g (σ_max/σ_min = %.3g), 99%%-energy rank %d of %d; SVD %.2f s, " ..
            "reading the file %.2f s."):format(first.sv_max, first.sv_min, first.sv_max / first.sv_min,
            first.effective_rank, math.min(first.words, first.width), first.svd_seconds, first.read_seconds))
    t:note(("A word is unargmaxable when no h makes it the strict top-1: its best lead over every other word is ≤ %g " ..
            "nats (exact: linear programs, GLPK, for the words a scan of candidate h does not certify). Exact for a " ..
            "single-softmax decoder; for a mixture's shared decoder (MoS, MoC) these are the words no single " ..
            "component can rank first, which the mixture still may: no proof for a mixture."):format(cfg.tolerance))
    report_files.print_and_save(t, ctx.out, "report")
    local plot_file = ctx.out .. "/spectrum.png"
    lmkit.plot.spectrum{out = plot_file, values = lmkit.tensor(first.spectrum), normalize = false,
                        title = ("Decoder spectrum, %s"):format(random and "random decoder" or s.decoder),
                        ylabel = "σᵢ / σ₁"}
    print("plot: " .. plot_file)
    print("report files: " .. ctx.out .. "/report.{md,csv,tex}")
  end,
}

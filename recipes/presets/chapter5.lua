-- The models the thesis's chapter 5 analyses (qualitative contexts, word similarity, embedding
-- spectra, Press vs ε-effective rank), and the one way its recipes train them:
--   local chapter5 = require "presets.chapter5"
--   settings = chapter5.settings{heads = recipe.setting("softmax,gss", "the models")}  -- and the shared ones
--   local entry = chapter5.model("gss")                                          -- label, head, family
--   local model, summary, corpus = chapter5.train{entry = entry, cfg = ctx.cfg, dir = ctx.dir}
--
-- Real words at tiny scale: the thesis's analyses read words (PTB's contexts, word-similarity
-- pairs), so `words = true` trains on ptb-mini (the mini protocol: PTB's valid split as training
-- data, data/README) instead of the synthetic language. `lines > 0` keeps only the first `lines`
-- lines of valid.txt and test.txt (a smaller vocabulary too), for a check that must take seconds.
--
-- Sharing trained models between recipes: `--set models=DIR` trains each model in
-- DIR/<dataset>-<scale>-...-<model>/ instead of the cell's folder; a recipe that finds a finished
-- run there loads its best model instead of training again (word_similarity, embedding_spectrum and
-- qualitative train the same models). Two processes must not train the same model at once.
local presets = require "presets.awd_lstm"
local recipe = require "lmkit.recipe"
local chapter5 = {}

-- In the thesis's column order (Tables 5.1, 5.3, 5.14). GSS uses the (c, k) chosen in §4.4.1 for all
-- later analyses: (−1.5, 2.5) on PTB, (−1.5, 3.0) on WikiText-2. MoS† and MoC† are the NT-ASGD
-- reproductions of Table 5.1; every other model there, and elsewhere in chapter 5, uses ET-ASGD.
chapter5.MODELS = {
  {key = "softmax", label = "Softmax", head = "softmax", family = "awd", switch = "et"},
  {key = "ss", label = "SS", head = "sigsoftmax", family = "awd", switch = "et"},
  {key = "gss", label = "GSS", head = "gss", family = "awd", switch = "et",
   options = {ptb = {c = -1.5, k = 2.5}, ["wikitext-2"] = {c = -1.5, k = 3.0}}},
  {key = "plif", label = "LMS-PLIF", head = "plif", family = "awd", switch = "et"},
  {key = "mos", label = "MoS", head = "mos", family = "mos", switch = "et"},
  {key = "moc", label = "MoC", head = "moc", family = "mos", switch = "et"},
  {key = "mos_nt", label = "MoS†", head = "mos", family = "mos", switch = "nt"},
  {key = "moc_nt", label = "MoC†", head = "moc", family = "mos", switch = "nt"},
}

local by_key = {}
for _, m in ipairs(chapter5.MODELS) do by_key[m.key] = m end

function chapter5.model(key)
  return by_key[key] or error(("chapter5: no model '%s' (known: %s)"):format(tostring(key), chapter5.known()), 2)
end

function chapter5.known()
  local keys = {}
  for _, m in ipairs(chapter5.MODELS) do keys[#keys + 1] = m.key end
  return table.concat(keys, ", ")
end

-- "softmax,gss" → the model entries, in the order given; unknown names are errors.
function chapter5.select(list)
  local entries = {}
  for key in tostring(list):gmatch("[^,%s]+") do entries[#entries + 1] = chapter5.model(key) end
  if #entries == 0 then error("chapter5: the model list is empty (known: " .. chapter5.known() .. ")", 2) end
  return entries
end

-- The settings every chapter-5 recipe takes, with the recipe's own on top.
function chapter5.settings(own)
  local s = presets.settings{"scale", "dataset", "epochs",
    seed = recipe.setting(0, "> 0 replaces the configuration's seed (Table 4.3: 141 / 1881 / 28)"),
    lines = recipe.setting(0, "> 0: real words from the first `lines` lines of valid.txt and test.txt only"),
    data = recipe.setting("", "the data folder (holding ptb/, wikitext-2/, word-similarity/); \"\" looks in " ..
                              "$LMKIT_DATA, ./data, $LMKIT_TEST_DATA, ../shared/data"),
    models = recipe.setting("", "a folder to share trained models between recipes (\"\": each cell's own)"),
    import = recipe.setting("", "models read from the reference code's checkpoints instead of trained: key=PATH[,key=PATH] " ..
                                "(softmax: awd-lstm-lm's; mos, mos_nt: the MoS code's), or key=thesis:PATH for any model " ..
                                "(the thesis's code's checkpoint of it); docs/analysis.md"),
    import_floor = recipe.setting(0, "an imported MoS model's log(p + floor): 0 is log p exactly, as the thesis's code " ..
                                     "computes it (our choice); 1e-8 is the MoS code's own computation"),
  }
  for k, v in pairs(own or {}) do s[k] = v end
  return s
end

-- The folder `sub` (a corpus, "word-similarity") of the data folder: the setting's, else the
-- first of $LMKIT_DATA, ./data, $LMKIT_TEST_DATA (what CTest sets), ../shared/data that has it.
function chapter5.data_dir(setting, sub)
  if setting and setting ~= "" then return setting .. "/" .. sub end
  local ok, folder = pcall(lmkit.data.locate, sub, {roots = {os.getenv("LMKIT_TEST_DATA") or "", "../shared/data"}})
  if not ok then error(("chapter5: %s; or pass --set data=DIR"):format((folder:gsub("^[^:]*:%d+: ", ""))), 2) end
  return folder
end

local function first_lines(src, dst, n)
  local existing = io.open(dst, "r")
  if existing then  -- written before (same source, same n): rewriting would only make the token cache stale
    existing:close()
    return
  end
  local f = assert(io.open(src, "r"))
  local kept = {}
  for line in f:lines() do
    if #kept >= n then break end
    kept[#kept + 1] = line
  end
  f:close()
  lmkit.write_file(dst, table.concat(kept, "\n") .. "\n")
end

-- The real corpus of cfg.dataset: the mini protocol at tiny scale (valid.txt as training data),
-- the full one otherwise; with cfg.lines > 0, a copy of the first lines under <out>/data/ (under
-- <models>/data/ when models are shared, so that every recipe's runs name the same corpus).
function chapter5.real_corpus(cfg, out)
  local folder = chapter5.data_dir(cfg.data, cfg.dataset)
  local protocol = cfg.scale == "tiny" and "mini" or "full"
  if cfg.lines > 0 then
    if protocol ~= "mini" then error("chapter5: lines > 0 is for the tiny scale (the mini protocol)", 2) end
    local cut = ("%s/data/%s-first%d"):format(cfg.models ~= "" and cfg.models or out, cfg.dataset, cfg.lines)
    lmkit.fs.mkdir(cut)
    for _, split in ipairs{"valid.txt", "test.txt"} do first_lines(folder .. "/" .. split, cut .. "/" .. split, cfg.lines) end
    folder = cut
  end
  return lmkit.data.corpus{name = cfg.dataset, path = folder, protocol = protocol}
end

-- The training settings of one model: its switch (ET at the scale's switch epoch; at tiny scale,
-- one epoch before the end, so that averaging is part of the run) and the recipe's epochs.
local function train_options(entry, p, cfg)
  local t = {switch = entry.switch}
  if cfg.epochs > 0 then t.epochs = cfg.epochs end
  local epochs = t.epochs or p.train.epochs
  if entry.switch == "et" then t.switch_epoch = presets.et_epoch(cfg, epochs) end
  return t
end

-- The format of lmkit.import_checkpoint for each model that the original papers' code can hold.
local IMPORT_FORMATS = {softmax = "awd-lstm", mos = "mos", mos_nt = "mos"}
-- The thesis's code (quettabit/awd-lstm-lmkit) trains every model: its --top_model for each.
local THESIS_TOP_MODELS = {softmax = "smax", ss = "s_smax", gss = "gs_smax", plif = "plif_smax", mos = "mos", moc = "moc",
                           mos_nt = "mos", moc_nt = "moc"}

-- --set import=mos=PATH,gss=thesis:PATH → {mos = PATH, gss = "thesis:PATH"}; keys are checked.
function chapter5.imports(cfg)
  local paths = {}
  for item in tostring(cfg.import or ""):gmatch("[^,]+") do
    local key, path = item:match("^%s*([%w_]+)%s*=%s*(.-)%s*$")
    if not key or path == "" or path == "thesis:" then
      error(("chapter5: import entry '%s' is not key=PATH or key=thesis:PATH (e.g. --set import=mos=mos_ptb.pt)"):format(item), 2)
    end
    chapter5.model(key)
    if path:sub(1, 7) ~= "thesis:" and not IMPORT_FORMATS[key] then
      error(("chapter5: model '%s' has no checkpoint of the original papers' code to import (softmax: awd-lstm-lm's, mos " ..
             "and mos_nt: the MoS code's); the thesis's code's checkpoint of it: --set import=%s=thesis:PATH"):format(key, key), 2)
    end
    paths[key] = path
  end
  return paths
end

-- An import's lmkit.import_checkpoint options and its file, from chapter5.imports' value for `entry`.
local function import_source(entry, value, cfg)
  if value:sub(1, 7) == "thesis:" then
    local options = {format = "thesis", top_model = THESIS_TOP_MODELS[entry.key]}
    if entry.key == "gss" then
      -- The (c, k) of §4.4.1 that the thesis's GSS models were trained with.
      local chosen = (entry.options or {})[cfg.dataset] or {}
      options.gs_smax_c, options.gs_smax_k = chosen.c, chosen.k
    end
    return options, value:sub(8)
  end
  return {format = IMPORT_FORMATS[entry.key]}, value
end

-- A reference checkpoint as the model of `entry`, with the valid/test perplexities of a run summary
-- measured here on the corpus (the preset's evaluation batch sizes), since no run trained it.
local function imported_model(entry, value, corpus, p, cfg)
  local options, path = import_source(entry, value, cfg)
  local mixture = entry.head == "mos" or entry.head == "moc"
  options.floor = mixture and (cfg.import_floor or 0) > 0 and cfg.import_floor or nil
  local model = lmkit.import_checkpoint(path, options)
  local n = corpus.vocab:size()
  local config = lmkit.json_decode(model:config())
  if config.vocab_size ~= n then
    error(("chapter5: the imported %s model (%s) has a vocabulary of %d words, the corpus %d: import a model of this " ..
           "corpus (the reference code's PTB/WikiText-2 ids are those of lmkit's full protocol: --set scale=small or paper)")
          :format(entry.label, path, config.vocab_size, n), 0)
  end
  local bptt = p.train.bptt or 70
  local valid = lmkit.evaluate(model, corpus.valid, {batch_size = p.train.eval_batch_size or 10, bptt = bptt})
  local test = lmkit.evaluate(model, corpus.test, {batch_size = p.train.test_batch_size or 1, bptt = bptt})
  return model, {status = "imported", imported = path, valid_ppl = valid.ppl, test_ppl = test.ppl}
end

-- Trains (or, with --set models=, reuses; with --set import=, imports) one model; returns model, run summary, corpus, preset.
--   o.entry (chapter5.model(...)), o.cfg (the recipe's settings), o.dir (the cell's folder),
--   o.out (the recipe's folder, for the cut-down corpus), o.words (real words at tiny scale),
--   o.corpus (one already loaded)
function chapter5.train(o)
  local entry, cfg = o.entry, o.cfg
  local p = presets.resolve{family = entry.family, dataset = cfg.dataset, scale = cfg.scale}
  local corpus = o.corpus
  if not corpus then
    if p.corpus.kind == "synthetic" and not o.words then
      corpus = presets.load_corpus(p)
    else
      corpus = chapter5.real_corpus(cfg, o.out or error("chapter5.train: 'out' is required for real words", 2))
    end
  end
  local import_path = chapter5.imports(cfg)[entry.key]
  if import_path then
    local model, summary = imported_model(entry, import_path, corpus, p, cfg)
    return model, summary, corpus, p
  end
  local train = train_options(entry, p, cfg)
  local seed = cfg.seed > 0 and cfg.seed or nil
  local run_dir = o.dir .. "/run"
  if cfg.models ~= "" then
    run_dir = ("%s/%s-%s-%s-lines%d-e%d-s%d-%s"):format(cfg.models, cfg.dataset, cfg.scale,
      (o.words or p.corpus.kind ~= "synthetic") and "words" or "synthetic", cfg.lines,
      train.epochs or p.train.epochs, seed or p.train.seed, entry.key)
  end
  local done = io.open(run_dir .. "/summary.json", "r")
  if done then
    done:close()
    local run = lmkit.open_run(run_dir)
    if run:summary().status == "finished" then return run:best_model(), run:summary(), corpus, p end
  end
  local options = entry.options and entry.options[cfg.dataset] or nil
  local model, summary = presets.train_cell{preset = p, head = presets.head(p, entry.head, options), dir = run_dir,
                                            seed = seed, train = train, corpus = corpus}
  return model, summary, corpus, p
end

-- The grid every chapter-5 analysis has: one cell per model chosen with --set heads=.
function chapter5.model_cells(cfg)
  local cells = {}
  for _, entry in ipairs(chapter5.select(cfg.heads)) do cells[#cells + 1] = {model = entry.key} end
  return cells
end

-- The cell's model, trained or loaded from --set models=DIR: model, summary, corpus.
-- words: train on real words (ptb-mini at tiny scale) instead of the synthetic language.
function chapter5.train_model_cell(cell, ctx, words)
  return chapter5.train{entry = chapter5.model(cell.model), cfg = ctx.cfg, dir = ctx.dir, out = ctx.out, words = words}
end

-- A line for a report: the ASGD switch each of the results' models trained with (chapter 5's
-- models are those of Tables 4.8/5.1: ET-ASGD at epoch 200, MoS†/MoC† NT-ASGD), at this scale.
function chapter5.switch_note(results, cfg)
  local groups, order = {}, {}
  local imports = chapter5.imports(cfg)
  for _, r in ipairs(results) do
    local entry = chapter5.model(r.cell.model)
    local text = "NT-ASGD"
    if imports[entry.key] then
      text = "imported from the reference code's checkpoint " .. imports[entry.key] .. ", not trained here"
      if entry.head == "mos" or entry.head == "moc" then
        text = text .. ((cfg.import_floor or 0) > 0 and (", log(p + %g) as the MoS code computes it"):format(cfg.import_floor)
                                             or ", log p exactly (the MoS code's log(p + 1e-8): --set import_floor=1e-8)")
      end
    elseif entry.switch == "et" then
      local p = presets.resolve{family = entry.family, dataset = cfg.dataset, scale = cfg.scale}
      text = ("ET-ASGD averaging after epoch %d"):format(presets.et_epoch(cfg, cfg.epochs > 0 and cfg.epochs or p.train.epochs))
    end
    if not groups[text] then groups[text] = {}; order[#order + 1] = text end
    table.insert(groups[text], entry.label)
  end
  local parts = {}
  for _, text in ipairs(order) do parts[#parts + 1] = ("%s (%s)"):format(text, table.concat(groups[text], ", ")) end
  return ("ASGD switch: %s; the thesis: ET-ASGD at epoch 200, NT-ASGD for MoS† and MoC†."):format(table.concat(parts, "; "))
end

return chapter5

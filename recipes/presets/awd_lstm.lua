-- Hyperparameters of the papers in one place (SPEC.md §2, thesis Table 4.3), and the three scales
-- a recipe can run at:
--   tiny   minutes on 2 CPU cores (what CI runs): the synthetic language or ptb-mini, a small model
--   small  about a GPU-hour: the real corpus, the paper's model, a few dozen epochs
--   paper  the published configuration and epoch counts
-- Usage in a recipe:
--   local presets = require "presets.awd_lstm"
--   local cfg = presets.resolve{family = "awd", dataset = "ptb", scale = "tiny"}
--   cfg.model (for lmkit.model, without head), cfg.train (for lmkit.train), cfg.corpus (how to load it)
local presets = {}

-- Shared by every configuration of Table 4.3.
presets.shared = {
  model = {wdrop = 0.5, dropoute = 0.1, dropout = 0.4, alpha = 2, beta = 1},
  train = {wdecay = 1.2e-6, bptt = 70, clip = 0.25, eval_batch_size = 10, test_batch_size = 1},
}

-- family "awd": Softmax, SigSoftmax, GSS, PLIF, ReLU, Sigmoid, AdvSoft; "mos": MoS, MoSS, MoC.
presets.paper = {
  awd = {
    ptb = {model = {dropouti = 0.4, dropouth = 0.3, emb = 400, nhid = 1150, nhidlast = 400},
           train = {lr = 20, batch_size = 20, seed = 141, epochs = 1000}},
    ["wikitext-2"] = {model = {dropouti = 0.65, dropouth = 0.2, emb = 400, nhid = 1150, nhidlast = 400},
                      train = {lr = 30, batch_size = 80, seed = 1881, epochs = 1000}},
  },
  mos = {
    ptb = {model = {dropouti = 0.4, dropouth = 0.225, emb = 280, nhid = 960, nhidlast = 620},
           head = {K = 15, dropoutl = 0.29},
           train = {lr = 20, batch_size = 12, seed = 28, epochs = 1000}},
    ["wikitext-2"] = {model = {dropouti = 0.55, dropouth = 0.2, emb = 300, nhid = 1150, nhidlast = 650},
                      head = {K = 15, dropoutl = 0.29},
                      train = {lr = 15, batch_size = 15, seed = 1881, epochs = 500}},
  },
}

-- A head kind's own settings at a scale, by kind (data, applied by presets.head to whichever kind
-- they name): at paper scale every kind keeps its declared defaults — LMS-PLIF's K = 100,000
-- intervals on [−T, T], T = 20 (thesis §5.6), its slopes' lr 0.02 (§4.3.2.1).

-- What a scale changes, applied over the paper configuration.
presets.scales = {
  tiny = {
    corpus = {kind = "synthetic", vocab = 200, states = 48, dim = 8, train = 60000, valid = 6000, test = 6000},
    model = {emb = 24, nhid = 96, nhidlast = 24, nlayers = 2, dropouti = 0.1, dropouth = 0.1, dropout = 0.1,
             dropoute = 0.0, wdrop = 0.1},
    -- a projecting head keeps nhidlast ≠ emb; one LSTM layer, because with two the tiny MoS stays
    -- on the unigram plateau (valid ppl ≈ 75 after 12 epochs, rank 1–5), with one it leaves it
    -- in 3 epochs
    mos_model = {emb = 16, nhidlast = 32, nlayers = 1},
    head = {K = 3},
    heads = {plif = {K = 1000}},  -- LMS-PLIF's intervals, fewer at this vocabulary
    train = {epochs = 3, batch_size = 20, bptt = 35, test_batch_size = 10, log_interval = 100, nonmono = 2},
  },
  small = {
    corpus = {kind = "files"},
    train = {epochs = 40, switch_epoch = 25},
  },
  paper = {corpus = {kind = "files"}},
}

local function merge(into, from)
  for k, v in pairs(from or {}) do into[k] = v end
  return into
end

-- {family = "awd"|"mos", dataset = "ptb"|"wikitext-2", scale = "tiny"|"small"|"paper"} →
-- {model = {...}, head = {...}, heads = {[kind] = {...}}, train = {...}, corpus = {...}, scale = ..., dataset = ...}
-- o.corpus ("" or nil: the scale's; "mini": the dataset's mini protocol; "full": its training split)
-- puts a scale's model and epochs on the real words, e.g. the tiny scale on ptb-mini.
function presets.resolve(o)
  local family, dataset, scale = o.family or "awd", o.dataset or "ptb", o.scale or "tiny"
  local paper = presets.paper[family] and presets.paper[family][dataset]
  if not paper then
    error(("presets: no configuration for family '%s' on dataset '%s' (families: awd, mos; datasets: ptb, wikitext-2)")
      :format(tostring(family), tostring(dataset)), 2)
  end
  local s = presets.scales[scale]
  if not s then error(("presets: unknown scale '%s' (tiny, small or paper)"):format(tostring(scale)), 2) end
  local cfg = {
    family = family, dataset = dataset, scale = scale,
    model = merge(merge({}, presets.shared.model), paper.model),
    head = merge({}, paper.head),
    train = merge(merge({}, presets.shared.train), paper.train),
    corpus = merge({name = dataset}, s.corpus),
  }
  if o.corpus ~= nil and o.corpus ~= "" then
    if o.corpus ~= "mini" and o.corpus ~= "full" then
      error(("presets: unknown corpus '%s' (\"\": the scale's, \"mini\" or \"full\")"):format(tostring(o.corpus)), 2)
    end
    cfg.corpus = {name = dataset, kind = "files", protocol = o.corpus}
  end
  merge(cfg.model, s.model)
  if family == "mos" then merge(cfg.model, s.mos_model) end
  merge(cfg.train, s.train)
  if family == "mos" and s.head and s.head.K then cfg.head.K = s.head.K end
  cfg.heads = s.heads or {}
  return cfg
end

presets.dataset_labels = {ptb = "PTB", ["wikitext-2"] = "WikiText-2"}
-- The real corpora's vocabulary sizes (SPEC §2; recipes/dataset_stats.lua measures them).
presets.vocab_sizes = {ptb = 10000, ["wikitext-2"] = 33278}

-- The paper's model of a family on a dataset as lmkit.model takes it, without its head: the sizes
-- and dropouts of Table 4.3 (shared ones included) and the corpus's vocabulary size. What the
-- benchmarks build (scripts/bench_*.lua), from this one copy.
function presets.paper_model(family, dataset)
  local cfg = presets.resolve{family = family, dataset = dataset, scale = "paper"}
  cfg.model.vocab_size = presets.vocab_sizes[dataset]
  return cfg.model, cfg
end

-- What a recipe's numbers are measured on, for its report tables (lmkit.report.table's data=) and
-- titles (.short): the paper's corpus at small and paper scale; at tiny scale a synthetic language
-- standing in for it, or, for recipes that need real words (o.words), its mini protocol (the
-- validation split as training data). The paper's numbers are compared (Δ) only on its own data.
--   presets.data(cfg) → {label=, short=, paper_data=, paper_label=}   (cfg: dataset, scale[, lines])
function presets.data(cfg, o)
  o = o or {}
  local name = presets.dataset_labels[cfg.dataset] or tostring(cfg.dataset)
  -- The corpus setting puts any scale on the real words: the mini protocol is never the paper's data,
  -- and a tiny model's numbers on the full corpus are not the paper's either. (rawget: a recipe's
  -- cfg refuses the keys it does not declare.)
  local corpus = rawget(cfg, "corpus")
  if corpus == "mini" then
    return {label = ("%s's mini protocol (trained on its validation split), %s scale: not the paper's training data")
              :format(name, cfg.scale),
            short = name .. "-mini", paper_data = false, paper_label = name}
  end
  if corpus == "full" and cfg.scale == "tiny" then
    return {label = ("%s with a tiny-scale model and epochs, not the paper's configuration"):format(name),
            short = name .. " (tiny model)", paper_data = false, paper_label = name}
  end
  if cfg.scale == "tiny" and corpus ~= "full" then
    if o.words then
      local cut = (cfg.lines or 0) > 0 and (", its first %d lines"):format(cfg.lines) or ""
      return {label = ("%s's mini protocol at tiny scale (trained on its validation split%s), not the paper's training data")
                :format(name, cut),
              short = name .. "-mini", paper_data = false, paper_label = name}
    end
    return {label = ("a synthetic language standing in for %s (tiny scale)"):format(name),
            short = "synthetic stand-in for " .. name, paper_data = false, paper_label = name}
  end
  return {label = ("%s (%s scale)"):format(name, cfg.scale), short = name, paper_data = true, paper_label = name}
end

-- Parameters of each LSTM layer of a model table (emb, nhid, nhidlast, nlayers; weights tied):
-- layer l maps its input (emb for the first, nhid after) to nhid (nhidlast for the last), with
-- 4·out·(in + out) weights and two bias vectors of 4·out. Returns the list and the recurrent
-- (hidden-to-hidden, DropConnect's) weights per layer.
function presets.lstm_parameters(m)
  local layers, recurrent = {}, {}
  local n = m.nlayers or 3
  for l = 1, n do
    local input = l == 1 and m.emb or m.nhid
    local output = l == n and m.nhidlast or m.nhid
    layers[l] = 4 * output * (input + output) + 8 * output
    recurrent[l] = 4 * output * output
  end
  return layers, recurrent
end

-- The thesis's Softmax‡ (§5.7.2, footnote 4): the baseline AWD-LSTM's dropout rates, each reduced in
-- proportion to the parameters of the layer it acts on when the model shrinks from `base` to
-- `small` (model tables with sizes and rates). The thesis gives no formula; lmkit reads it as
--   dropoute, dropouti (embedding rows, embedded words)  × emb_small / emb_base (the embedding's N·emb)
--   dropouth (between LSTM layers)                       × parameters of the layers before the last
--   dropout (the last layer's output)                    × parameters of the last layer
--   wdrop (DropConnect on recurrent weights)              × recurrent weights of all layers
-- (a rate whose layers do not exist on one side, e.g. dropouth of a one-layer model, is kept).
-- Returns the rates and the ratios.
function presets.proportional_dropouts(base, small)
  local function sum(list, first, last)
    local total = 0
    for i = first or 1, last or #list do total = total + list[i] end
    return total
  end
  local base_layers, base_recurrent = presets.lstm_parameters(base)
  local small_layers, small_recurrent = presets.lstm_parameters(small)
  local function ratio(a, b) return (a > 0 and b > 0) and a / b or 1 end
  local r = {
    embedding = small.emb / base.emb,
    between = ratio(sum(small_layers, 1, #small_layers - 1), sum(base_layers, 1, #base_layers - 1)),
    last = small_layers[#small_layers] / base_layers[#base_layers],
    recurrent = sum(small_recurrent) / sum(base_recurrent),
  }
  return {dropoute = base.dropoute * r.embedding, dropouti = base.dropouti * r.embedding,
          dropouth = base.dropouth * r.between, dropout = base.dropout * r.last, wdrop = base.wdrop * r.recurrent}, r
end

-- The synthetic language behind each corpus presets.load_corpus generated (weak keys: a corpus no
-- longer held is forgotten), for presets.yardsticks's bound.
local languages = setmetatable({}, {__mode = "k"})

-- The corpus a resolved configuration names: the synthetic language at tiny scale, else the real
-- corpus (full protocol; ptb-mini where only valid/test splits are present).
function presets.load_corpus(cfg)
  local c = cfg.corpus
  if c.kind == "synthetic" then
    local lang = lmkit.data.synthetic{vocab = c.vocab, states = c.states, dim = c.dim, seed = 1}
    local corpus = lang:corpus{train = c.train, valid = c.valid, test = c.test}
    languages[corpus] = {language = lang, key = ("%d/%d/%d"):format(c.vocab, c.states, c.dim)}
    return corpus, lang
  end
  return lmkit.data.corpus{name = c.name, protocol = c.protocol or "full"}
end

-- The two yardsticks of a test perplexity on `corpus` (the quickstart's; docs/recipes.md, "Yardsticks"):
--   unigram_ppl  the unigram model's: the training split's word frequencies (add-½), no context;
--   bound_ppl    the true distribution's, exp(entropy rate) from 200,000 fresh tokens, which no
--                model beats in expectation: only for a synthetic language presets.load_corpus
--                made (nil for real text, whose bound is unknown).
local bounds = {}  -- per language: a grid's cells share it, and sampling it takes a moment
function presets.yardsticks(corpus)
  local y = {unigram_ppl = corpus:unigram_perplexity("test")}
  local known = languages[corpus]
  if known then
    bounds[known.key] = bounds[known.key] or known.language:best_perplexity(200000)
    y.bound_ppl = bounds[known.key]
  end
  return y
end

-- What the registry declares of a built-in kind (lmkit.heads.info), nil for other names
-- (plif_frozen, Lua heads).
function presets.head_info(name)
  for _, kind in ipairs(lmkit.heads.kinds()) do
    if kind == name then return lmkit.heads.info(name) end
  end
  return nil
end

-- True for the head kinds that map h to a latent space of their own (the MoS family), as the kind
-- declares it.
function presets.head_projects(name)
  local info = presets.head_info(name)
  return info ~= nil and info.projects
end

-- A head spec by name, with the resolved configuration's settings and the caller's on top: the MoS
-- configuration's dropoutl for a projecting kind that has one, its K for a mixture (the registry's
-- capabilities; Mixtape keeps its own K), then the kind's own settings at this scale (cfg.heads):
--   presets.head(p, "gss", {c = 1, k = 2}), presets.head(p, "mos"), presets.head(p, "plif", {freeze = true})
function presets.head(cfg, name, options)
  local o = {}
  local info = presets.head_info(name)
  if info then
    local declared = {}
    for _, option in ipairs(info.options) do declared[option.name] = true end
    if info.projects and declared.dropoutl then o.dropoutl = cfg.head.dropoutl end
    if info.mixture then o.K = cfg.head.K end
  end
  merge(o, (cfg.heads or {})[name])
  merge(o, options)
  local make = lmkit.heads[name]
  if type(make) ~= "function" then error(("presets.head: no head named '%s'"):format(tostring(name)), 2) end
  return make(o)
end

-- The epoch after which ET-ASGD starts averaging at a recipe's scale: the thesis's 200 at paper
-- scale, the small scale's 25, at tiny scale the last but one epoch (so that averaging is part of
-- a few-epoch run); the `switch_epoch` setting > 0 overrides.
function presets.et_epoch(cfg, epochs)
  -- rawget: a recipe's settings are strict tables, and not every recipe has these settings.
  local setting = rawget(cfg, "switch_epoch") or 0
  if setting > 0 then return setting end
  if cfg.scale == "tiny" then
    return math.max(1, (epochs or presets.scales.tiny.train.epochs) - 1)
  end
  return (presets.scales[cfg.scale] and presets.scales[cfg.scale].train or {}).switch_epoch or 200
end

-- The training options a recipe's settings override in the preset: `epochs` > 0 replaces the
-- scale's epoch count (the quick checks and tests train for one or two); `switch` ("et" or "nt",
-- the switch of the thesis's table, SPEC §2) with ET's epoch from presets.et_epoch. `base`
-- (options of the cell's own, e.g. {switch = "nt"}) is copied first and wins over the settings'
-- switch; the epochs setting wins over it.
--   presets.train_cell{..., train = presets.train_overrides(ctx.cfg, {switch = cell.switch})}
function presets.train_overrides(cfg, base)
  local train = merge({}, base)
  if (cfg.epochs or 0) > 0 then train.epochs = cfg.epochs end
  if train.switch == nil then train.switch = rawget(cfg, "switch") end
  if train.switch == "et" and train.switch_epoch == nil then train.switch_epoch = presets.et_epoch(cfg, train.epochs) end
  local init_from = rawget(cfg, "init_from")
  if init_from and init_from ~= "" and train.init_from == nil then train.init_from = init_from end
  return train
end

-- What one cell starts from when `source` (the init_from setting) names a recipe's folder (its
-- recipe.json, whichever of `lmkit run` and `lmkit batch` made it, or an older batch's
-- batch/manifest.json): the same cell's run there, <source>/cells/<id>/run, `run_dir` being the
-- cell's own <out>/cells/<id>/run; that cell must have finished (its result.json). A run folder or
-- checkpoint is every cell's. nil: no init_from. A cell whose own run has begun (its state.ckpt)
-- continues from that state, and needs the source no more.
function presets.cell_init_from(source, run_dir)
  if source == nil or source == "" then return nil end
  source = source:gsub("(.)/+$", "%1")
  if not lmkit.fs.exists(source .. "/recipe.json") and not lmkit.fs.exists(source .. "/batch/manifest.json") then
    return source
  end
  local id = run_dir:match("/cells/([^/]+)/run/*$")
  if not id then
    error(("init_from = %q is a recipe's folder, but this run (%s) is no recipe cell's: name a run folder or a " ..
           "checkpoint"):format(source, run_dir), 0)
  end
  local run = source .. "/cells/" .. id .. "/run"
  if lmkit.fs.exists(run_dir .. "/state.ckpt") then return run end
  if not lmkit.fs.exists(source .. "/cells/" .. id .. "/result.json") or not lmkit.fs.exists(run .. "/best.ckpt") then
    error(("init_from = %q: that recipe folder has no finished cell %s (%s/cells/%s/result.json, and its run's " ..
           "best.ckpt): finish that cell there first, or name one run folder or checkpoint for every cell"):format(
      source, id, source, id), 0)
  end
  return run
end

-- A line for a report: the switch a recipe trained with, beside the thesis's (thesis = false: a
-- recipe beyond the thesis, no thesis table to name).
function presets.switch_note(cfg, thesis)
  local switch = rawget(cfg, "switch")
  local ours = switch == "et"
    and ("ET-ASGD, averaging after epoch %d"):format(presets.et_epoch(cfg, (cfg.epochs or 0) > 0 and cfg.epochs or nil))
    or "NT-ASGD (non-monotone trigger)"
  if thesis == false then return ("ASGD switch: %s."):format(ours) end
  return ("ASGD switch: %s; the thesis's table used %s."):format(ours, thesis or
    (switch == "et" and "ET-ASGD at epoch 200" or "NT-ASGD"))
end

-- Trains one model the way every recipe cell does, and returns model, run summary, corpus:
--   presets.train_cell{preset = p, head = presets.head(p, "softmax"), dir = ctx.dir .. "/run",
--                      seed = 1, model = {...}, train = {...}, corpus = corpus}
-- `model` and `train` override the preset's settings (e.g. {switch = "et"}, {flood = 1.0});
-- `seed` replaces the preset's seed (weights and training); `corpus` reuses one already loaded.
-- The run folder makes it resumable: a preempted cell continues from its state.ckpt.
function presets.train_cell(o)
  local p = o.preset or error("presets.train_cell: 'preset' (from presets.resolve) is required", 2)
  local corpus = o.corpus or presets.load_corpus(p)
  local m = merge(merge({}, p.model), o.model)
  m.vocab_size = corpus.vocab:size()
  m.head = o.head or error("presets.train_cell: 'head' is required", 2)
  local t = merge(merge({}, p.train), o.train)
  if o.seed then t.seed = o.seed end
  lmkit.seed(t.seed)
  local model = lmkit.model(m)
  t.model, t.corpus = model, corpus
  t.run_dir = o.dir or error("presets.train_cell: 'dir' (the cell's run folder) is required", 2)
  t.init_from = presets.cell_init_from(t.init_from, t.run_dir)
  local run = lmkit.train(t)
  return model, run:summary(), corpus
end

-- `result` (a cell's result table) with its corpus's yardsticks (presets.yardsticks) added, for
-- the report's t:note_yardsticks (lmkit.report.yardsticks).
function presets.with_yardsticks(result, corpus)
  for k, v in pairs(presets.yardsticks(corpus)) do result[k] = v end
  return result
end

-- The settings the training recipes share, declared once with their docs. A recipe takes them by
-- name and adds its own:
--   settings = presets.settings{"scale", "dataset", "epochs", "switch", "switch_epoch",
--                               switch = "nt",                      -- its own default, the shared doc
--                               K = recipe.setting(15, "mixture components"),  -- its own setting
--   }
local recipe = require "lmkit.recipe"
presets.SHARED_SETTINGS = {
  scale = recipe.setting("tiny", "tiny | small | paper (recipes/presets/awd_lstm.lua)", {"tiny", "small", "paper"}),
  dataset = recipe.setting("ptb", "ptb | wikitext-2", {"ptb", "wikitext-2"}),
  epochs = recipe.setting(0, "> 0 overrides the scale's epoch count"),
  switch = recipe.setting("et", "the ASGD switch of the thesis's table (SPEC §2): \"et\" or \"nt\"", {"et", "nt"}),
  switch_epoch = recipe.setting(0, "> 0: ET's epoch (default: 200 at paper scale, 25 small, tiny: the last but one)"),
  seeds = recipe.setting(11, "the first is the configuration's own seed"),
  corpus = recipe.setting("", "the words: \"\" the scale's (tiny: a synthetic language standing in for the dataset; "
                              .. "small, paper: its full protocol), \"mini\": the dataset's mini protocol (ptb-mini, wt2-mini: "
                              .. "trained on its validation split, docs/data.md), \"full\": its training split",
                          {"", "mini", "full"}),
  init_from = recipe.setting("", "a model every cell starts from (lmkit.train's init_from; a head of another kind "
                                 .. "takes what fits by name and shape): a run folder or checkpoint for every cell, or "
                                 .. "a folder of a recipe's cells, each cell from its own cell's run there"),
}

function presets.settings(spec)
  local out = {}
  for _, key in ipairs(spec) do
    local shared = presets.SHARED_SETTINGS[key]
    if not shared then
      local known = {}
      for k in pairs(presets.SHARED_SETTINGS) do known[#known + 1] = k end
      table.sort(known)
      error(("presets.settings: no shared setting '%s' (shared: %s)"):format(tostring(key), table.concat(known, ", ")), 2)
    end
    out[key] = shared
  end
  for key, value in pairs(spec) do
    if type(key) == "string" then
      local shared = presets.SHARED_SETTINGS[key]
      -- A shared setting with the recipe's own default keeps the shared doc.
      if shared and not recipe.is_setting(value) then value = recipe.setting(value, shared.doc, shared.choices) end
      out[key] = value
    end
  end
  return out
end

return presets

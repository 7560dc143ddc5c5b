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

-- LMS-PLIF's own settings (thesis §5.6): K intervals on [−T, T], slopes trained with lr 0.02.
presets.plif = {K = 100000, T = 20, own_lr = 0.02}

-- What a scale changes, applied over the paper configuration.
presets.scales = {
  tiny = {
    corpus = {kind = "synthetic", vocab = 200, states = 48, dim = 8, train = 60000, valid = 6000, test = 6000},
    model = {emb = 24, nhid = 96, nhidlast = 24, nlayers = 2, dropouti = 0.1, dropouth = 0.1, dropout = 0.1,
             dropoute = 0.0, wdrop = 0.1},
    mos_model = {emb = 16, nhidlast = 32},  -- a projecting head keeps nhidlast ≠ emb
    head = {K = 3, plif_K = 1000},
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
-- {model = {...}, head = {...}, train = {...}, corpus = {...}, scale = ..., dataset = ...}
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
  merge(cfg.model, s.model)
  if family == "mos" then merge(cfg.model, s.mos_model) end
  merge(cfg.train, s.train)
  if s.head then
    if family == "mos" and s.head.K then cfg.head.K = s.head.K end
    cfg.plif_K = s.head.plif_K
  end
  return cfg
end

-- The corpus a resolved configuration names: the synthetic language at tiny scale, else the real
-- corpus (full protocol; ptb-mini where only valid/test splits are present).
function presets.load_corpus(cfg)
  local c = cfg.corpus
  if c.kind == "synthetic" then
    local lang = lmkit.data.synthetic{vocab = c.vocab, states = c.states, dim = c.dim, seed = 1}
    return lang:corpus{train = c.train, valid = c.valid, test = c.test}, lang
  end
  return lmkit.data.corpus{name = c.name, protocol = c.protocol or "full"}
end

return presets

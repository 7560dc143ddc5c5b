-- The model sizes of the fair MoS vs Softmax comparison (thesis §5.7.2, recipes/fair_mos_softmax.lua):
-- every model has Softmax†'s layers (the MoS configuration's nhid and depth) with emb = nhidlast = d,
-- d′ = 280 at the paper's nhid = 960, and the parameter-matched Softmax♣/★ has a larger d.
local presets = require "presets.awd_lstm"

local fair = {}

-- The thesis's Softmax♣/★ width (§5.7.2: "d raised from 280 to 340", 17.56M parameters vs MoS's
-- 17.53M): used at paper scale on PTB, where d′ = 280 and the vocabulary has 10,000 words.
fair.THESIS_MATCHED = {d = 340, d_base = 280, vocab = 10000}

-- d′ at this scale: the thesis's 280 at nhid = 960, in proportion to the preset's nhid (cfg.d > 0 sets it).
function fair.base_d(cfg, mos_p)
  if cfg.d and cfg.d > 0 then return cfg.d end
  return math.max(1, math.floor(280 * mos_p.model.nhid / 960 + 0.5))
end

function fair.sizes(mos_p, d)
  return {emb = d, nhidlast = d, nhid = mos_p.model.nhid, nlayers = mos_p.model.nlayers}
end

-- Trainable parameters of the MoS configuration's model with emb = nhidlast = d and the given head.
function fair.count(mos_p, vocab, d, head)
  local m = {}
  for k, v in pairs(mos_p.model) do m[k] = v end
  for k, v in pairs(fair.sizes(mos_p, d)) do m[k] = v end
  m.vocab_size, m.head = vocab, presets.head(mos_p, head)
  local n = 0
  for _, t in ipairs(lmkit.model(m):parameters()) do n = n + t:numel() end
  return n
end

-- The d ≥ d′ whose Softmax model's parameter count is closest to MoS†'s (the count grows with d:
-- double, then bisect for the first d at or above the target, then take the closer neighbour).
-- Returns d and MoS†'s count.
local closest_cache = {}
function fair.closest_width(mos_p, vocab, d0)
  local key = ("%d,%d,%d"):format(vocab, d0, mos_p.model.nhid)
  if closest_cache[key] then return table.unpack(closest_cache[key]) end
  local target = fair.count(mos_p, vocab, d0, "mos")
  local function f(d) return fair.count(mos_p, vocab, d, "softmax") end
  local lo, hi = d0, d0
  while f(hi) < target do lo, hi = hi, hi * 2 end
  while hi - lo > 1 do
    local mid = (lo + hi) // 2
    if f(mid) < target then lo = mid else hi = mid end
  end
  local d = hi
  if hi > d0 and math.abs(f(hi - 1) - target) < math.abs(f(hi) - target) then d = hi - 1 end
  closest_cache[key] = {d, target}
  return d, target
end

-- Softmax♣/★'s d and MoS†'s parameter count: the thesis's 340 at paper scale on PTB (the closest-count
-- rule would give 339 there), the closest-count rule elsewhere (the thesis gives no other width).
function fair.softmax_width(cfg, mos_p, vocab, d0)
  local thesis = fair.THESIS_MATCHED
  if cfg.scale == "paper" and d0 == thesis.d_base and vocab == thesis.vocab then
    return thesis.d, fair.count(mos_p, vocab, d0, "mos")
  end
  return fair.closest_width(mos_p, vocab, d0)
end

return fair

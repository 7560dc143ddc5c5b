-- lmkit.configure: recipe defaults with command-line settings applied, strictly.
local T = require "lmkit.testing"

local defaults = {lr = 20, epochs = 3, head = "softmax", seeds = {141}, model = {nhid = 1150, dropout = 0.4}}

T.test("settings override defaults with the defaults' types", function()
  local cfg = lmkit.configure(defaults, {settings = {"lr=0.5", "seeds=1,2,3", "model.dropout=0", "head=mos"}})
  T.eq(cfg.lr, 0.5)
  T.eq(cfg.seeds, {1, 2, 3})
  T.eq(cfg.model.dropout, 0.0)
  T.eq(cfg.model.nhid, 1150)
  T.eq(cfg.head, "mos")
  T.eq(cfg.epochs, 3)
end)

T.test("unknown keys and wrong types are named", function()
  T.raises(function() lmkit.configure(defaults, {settings = {"epoch=3"}}) end, "did you mean 'epochs'?")
  T.raises(function() lmkit.configure(defaults, {settings = {"epochs=many"}}) end, "'epochs' expects a number, got 'many'")
  T.raises(function() lmkit.configure(defaults, {settings = {"model=3"}}) end, "--set model.FIELD=VALUE")
  T.raises(function() lmkit.configure({f = print}) end, "'f' is a function")
end)

T.test("reading a missing setting is an error", function()
  local cfg = lmkit.configure(defaults, {settings = {}})
  T.raises(function() return cfg.lrr end, "no setting 'lrr' (known: epochs, head, lr, model, seeds)")
  T.raises(function() return cfg.model.nhd end, "no setting 'model.nhd'")
end)

T.test("without command-line settings the defaults come back", function()
  local cfg = lmkit.configure(defaults)
  T.eq(cfg.lr, 20)
  T.eq(lmkit.settings, {})
end)

T.run()

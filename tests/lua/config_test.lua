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

T.test("numbers from the command line are finite and within range", function()
  T.raises(function() lmkit.configure(defaults, {settings = {"lr=inf"}}) end, "--set lr=inf: 'lr' expects a finite number, got 'inf'")
  T.raises(function() lmkit.configure(defaults, {settings = {"lr=nan"}}) end, "'lr' expects a finite number, got 'nan'")
  T.raises(function() lmkit.configure(defaults, {settings = {"lr=1e400"}}) end,
           "'lr' expects a number within the range of a double, got '1e400'")
  T.raises(function() lmkit.configure(defaults, {settings = {"epochs=99999999999999999999"}}) end,
           "'epochs' expects a number within the 64-bit integer range, got '99999999999999999999'")
  T.eq(lmkit.configure(defaults, {settings = {"epochs=-9223372036854775808"}}).epochs, math.mininteger)
  -- An integer default takes a fraction (`lr = 20` is an integer in Lua); the option that needs an
  -- integer rejects it where it is read.
  T.eq(lmkit.configure(defaults, {settings = {"epochs=1.5"}}).epochs, 1.5)
  T.raises(function() lmkit.train{model = lmkit.model{vocab_size = 5, emb = 4, nhid = 4, nhidlast = 4, nlayers = 1},
                                  corpus = lmkit.data.corpus{name = "synthetic", vocab = 5, states = 2, dim = 2,
                                                             train = 200, valid = 50, test = 50},
                                  run_dir = os.tmpname() .. "-never", epochs = 1.5} end,
           "training option 'epochs' must be an integer, got 1.5")
end)

T.test("model options name themselves and show the value", function()
  T.raises(function() lmkit.model{vocab_size = 10, dropout = 1.5} end, "AWD-LSTM option 'dropout' must be in [0, 1), got 1.5")
  T.raises(function() lmkit.model{vocab_size = 10, nhid = 1e20} end, "option 'nhid' must be an integer within the 64-bit range, got 1e+20")
  T.raises(function() lmkit.heads.mos{K = "ten"} end, "option 'K' must be an integer, got \"ten\"")
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

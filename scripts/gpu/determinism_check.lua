-- Two training runs from one seed per fused kernel's head, through the lmkit executable (not the
-- test program): do their numbers agree bit for bit, and does the process end cleanly? Run with
-- LMKIT_DETERMINISTIC=1 (cuBLAS's workspace is set at the process's start):
--   LMKIT_DETERMINISTIC=1 ./build/lmkit run scripts/gpu/determinism_check.lua --set device=cuda
-- run_on_gpu.sh's determinism step. Each line goes to stderr as it is known (a crash keeps them);
-- the last one, "determinism_check: end of script", says the script itself finished, so a crash
-- after it is in the process's exit.
local cfg = lmkit.configure({device = "cuda", epochs = 1, cuda_graphs = "off", out = ""})
local function say(text) io.stderr:write("determinism_check: " .. text .. "\n") end
say(("deterministic=%s device=%s cuda_graphs=%s"):format(tostring(lmkit.deterministic()), cfg.device, cfg.cuda_graphs))
local out = cfg.out ~= "" and cfg.out or os.tmpname() .. ".d"
local language = lmkit.data.synthetic{vocab = 200, states = 48, dim = 8, seed = 1}
local corpus = language:corpus{train = 20000, valid = 2000, test = 2000}
local heads = {
  {"softmax", function() return lmkit.heads.softmax() end},
  {"gss", function() return lmkit.heads.gss{c = 1.0, k = 1.5} end},
  {"plif", function() return lmkit.heads.plif{K = 2000} end},
  {"mos", function() return lmkit.heads.mos{K = 3} end},
}
local differing = 0
for _, entry in ipairs(heads) do
  local kind, head = entry[1], entry[2]
  local results = {}
  for _, name in ipairs({"a", "b"}) do
    lmkit.seed(11)
    local model = lmkit.model{vocab_size = 200, emb = 24, nhid = 48, nhidlast = 24, nlayers = 2, dropout = 0.1,
                              dropouth = 0.1, dropouti = 0.1, dropoute = 0.1, wdrop = 0.1, head = head()}
    model:to(cfg.device)
    local run = lmkit.train{model = model, corpus = corpus, run_dir = out .. "/" .. kind .. name, lr = 5, batch_size = 4,
                            bptt = 10, epochs = cfg.epochs, switch = "none", seed = 11, log_interval = 100,
                            eval_batch_size = 10, test_batch_size = 1, cuda_graphs = cfg.cuda_graphs}
    local s = run:summary()
    results[name] = ("%.17g %.17g"):format(s.valid_ppl, s.test_ppl)
    say(("%s run %s: valid and test ppl %s"):format(kind, name, results[name]))
    -- Whether graphs ran (the numbers alone cannot tell a graphed run from one that fell back).
    local graphs = s.cuda_graphs
    if graphs then
      say(("%s graphs %s: captured %d, replayed %d%s"):format(kind, name, graphs.captured or 0, graphs.replayed or 0,
          graphs.eager_because and (", eager because " .. graphs.eager_because) or ""))
    end
  end
  if results.a ~= results.b then differing = differing + 1 end
  say(("%s: %s"):format(kind, results.a == results.b and "bit-identical" or "DIFFER"))
end
if cfg.out == "" then os.execute(("rm -rf '%s'"):format(out:gsub("'", "'\\''"))) end
say(("result: %d of %d heads bit-identical"):format(#heads - differing, #heads))
say("end of script")
if differing > 0 then error(("%d heads gave different numbers from one seed"):format(differing), 0) end

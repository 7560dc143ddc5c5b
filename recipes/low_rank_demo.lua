-- Low-rank demo: recover the rank of a noisy low-rank matrix by gradient descent, all in Lua on lmkit
-- tensors. The same question — how many singular values does a matrix really have? — is the one the
-- softmax-bottleneck analysis asks of a language model's log-probability matrix.
--
--   lmkit run recipes/low_rank_demo.lua [--set rank=5 --set steps=400 ...]
local cfg = lmkit.configure({
  rows = 60, cols = 40,   -- the target matrix
  rank = 3,               -- its true rank
  noise = 0.01,           -- std of the Gaussian noise added to it
  width = 10,             -- inner dimension of the fitted factors U (rows×width) and V (width×cols)
  steps = 300,
  lr = 0.004,             -- below 1/σ_max² of the target, so gradient descent is stable
  weight_decay = 0.5,     -- L2 on U and V = a nuclear-norm penalty: shrinks σ below it to 0
  threshold = 0.05,       -- singular values above threshold·σ_max count toward the rank
  seed = 141,
})

lmkit.seed(cfg.seed)
local opts = {dtype = "float64"}
local target = lmkit.randn(cfg.rows, cfg.rank, opts):matmul(lmkit.randn(cfg.rank, cfg.cols, opts))
target = target + lmkit.randn(cfg.rows, cfg.cols, opts) * cfg.noise

local U = (lmkit.randn(cfg.rows, cfg.width, opts) * 0.1):requires_grad_()
local V = (lmkit.randn(cfg.width, cfg.cols, opts) * 0.1):requires_grad_()

local function step_update(p)
  p:sub_(p.grad, cfg.lr)
  p:mul_(1 - cfg.lr * cfg.weight_decay)
  p.grad = nil
end

io.write(("fitting a %dx%d matrix of rank %d with factors of width %d\n"):format(cfg.rows, cfg.cols, cfg.rank, cfg.width))
io.write(("%8s  %14s\n"):format("step", "½‖UV − M‖²"))
local loss
for step = 1, cfg.steps do
  loss = ((U:matmul(V) - target) ^ 2):sum() / 2
  loss:backward()
  lmkit.no_grad(function()
    step_update(U)
    step_update(V)
  end)
  if step == 1 or step % math.max(1, cfg.steps // 6) == 0 or step == cfg.steps then
    io.write(("%8d  %14.6f\n"):format(step, loss:item()))
  end
end

local fitted = lmkit.no_grad(function() return U:matmul(V) end)
local sv = fitted:svdvals()
local largest = sv[1]:item()
io.write("\nsingular values of the fit (σ / σ_max):\n")
local rank = 0
for i = 1, math.min(cfg.width, sv:numel()) do
  local ratio = sv[i]:item() / largest
  local counted = ratio > cfg.threshold
  if counted then rank = rank + 1 end
  io.write(("  σ%-3d %10.4f  %-40s%s\n"):format(i, ratio, ("#"):rep(math.floor(ratio * 40 + 0.5)), counted and " counted" or ""))
end
local relative_error = ((fitted - target):norm() / target:norm()):item()
io.write(("\nrecovered rank: %d (true rank %d); relative error ‖UV − M‖/‖M‖ = %.3f\n")
  :format(rank, cfg.rank, relative_error))

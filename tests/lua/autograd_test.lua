-- Autograd from Lua, checked against central finite differences in float64: the way a new head or
-- loss composed in Lua would be verified.
local T = require "lmkit.testing"

-- max |analytic - numeric| over the entries of x for the scalar function f.
local function gradient_error(f, x)
  x.requires_grad = true
  x.grad = nil
  f(x):backward()
  local analytic = x.grad:clone()
  local worst, h = 0, 1e-6
  local flat = x:detach():view(-1)
  for i = 1, flat:numel() do
    local keep = flat[i]:item()
    flat[i] = keep + h
    local up = f(x:detach()):item()
    flat[i] = keep - h
    local down = f(x:detach()):item()
    flat[i] = keep
    local numeric = (up - down) / (2 * h)
    worst = math.max(worst, math.abs(numeric - analytic:view(-1)[i]:item()))
  end
  return worst
end

T.test("gradient of a log-softmax loss matches finite differences", function()
  lmkit.seed(1)
  local target = 3
  local function loss(logits) return -logits:log_softmax()[target] end
  T.near(gradient_error(loss, lmkit.randn(6, {dtype = "float64"})), 0, 1e-8)
end)

T.test("gradient of a sigsoftmax-style transform matches finite differences", function()
  lmkit.seed(2)
  -- log_softmax(2l - softplus(l)): SigSoftmax written in Lua.
  local function loss(l) return -(l * 2 - l:softplus()):log_softmax()[2] end
  T.near(gradient_error(loss, lmkit.randn(5, {dtype = "float64"})), 0, 1e-8)
end)

T.test("matrix product chain rule", function()
  lmkit.seed(3)
  local b = lmkit.randn(3, 2, {dtype = "float64"})
  local function loss(a) return (a:matmul(b)):tanh():sum() end
  T.near(gradient_error(loss, lmkit.randn(4, 3, {dtype = "float64"})), 0, 1e-8)
end)

T.test("grad fields and no_grad", function()
  local w = lmkit.ones(3, {requires_grad = true})
  T.eq(w.requires_grad, true)
  T.eq(w.is_leaf, true)
  T.eq(w.grad, nil)
  local y = (w * w):sum()
  T.eq(y.grad_fn, "SumBackward0")
  y:backward()
  T.eq(w.grad:totable(), {2, 2, 2})
  lmkit.no_grad(function() w:sub_(w.grad, 0.5) end)
  T.eq(w:detach():totable(), {0, 0, 0})
  T.eq(w.is_leaf, true)
  w.grad = nil
  T.eq(w.grad, nil)
  T.raises(function() lmkit.ones(2, {requires_grad = true}):backward() end, "one-element tensor")
end)

T.run()

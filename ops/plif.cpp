#include "ops/plif.h"

#include <ATen/Parallel.h>

#include <cmath>
#include <vector>

#include "ops/check.h"
#include "ops/kernel_check.h"
#ifdef LMKIT_OPS_CUDA
#include "ops/cuda/dispatch.h"
#endif

namespace lmkit::ops {
namespace {

// Knot values y_0..y_{K−1} (the left end of each piece), accumulated in double.
torch::Tensor knot_values(const torch::Tensor& slopes, double T) {
  const int64_t K = slopes.size(0);
  const double w = 2 * T / static_cast<double>(K);
  auto s = slopes.to(torch::kFloat64);
  auto y = torch::empty({K}, s.options());
  y[0] = -T * s[0];
  if (K > 1) y.slice(0, 1) = -T * s[0] + w * torch::cumsum(s.slice(0, 0, K - 1), 0);
  return y;
}

// Interval index of every logit (clamped so the end pieces extend).
torch::Tensor interval_of(const torch::Tensor& l, int64_t K, double T) {
  const double w = 2 * T / static_cast<double>(K);
  return torch::floor((l.to(torch::kFloat64) + T) / w).clamp(0, K - 1).to(torch::kInt64);
}

template <typename scalar_t>
inline int64_t interval(scalar_t x, double T, double w, int64_t K) {
  const double i = std::floor((static_cast<double>(x) + T) / w);
  if (!(i >= 0)) return 0;  // also catches NaN
  return i >= static_cast<double>(K) ? K - 1 : static_cast<int64_t>(i);
}

// f(l) with the op's own kernel (fused) or ATen ops; no autograd.
torch::Tensor plif_values(const torch::Tensor& l, const torch::Tensor& slopes, double T, bool fused) {
  const int64_t K = slopes.size(0);
  const double w = 2 * T / static_cast<double>(K);
  auto y = knot_values(slopes, T);
  torch::Tensor out;
#ifdef LMKIT_OPS_CUDA
  if (fused && l.is_cuda()) {
    out = cuda::plif_forward(l, y, slopes, T);
    detail::fused_result("plif", out);
    return out;
  }
#endif
  if (fused && l.device().is_cpu()) {
    out = torch::empty_like(l);
    auto s = slopes.to(torch::kFloat64).contiguous();
    const double* sp = s.data_ptr<double>();
    const double* yp = y.data_ptr<double>();
    AT_DISPATCH_FLOATING_TYPES(l.scalar_type(), "plif_cpu", [&] {
      const scalar_t* x = l.data_ptr<scalar_t>();
      scalar_t* o = out.data_ptr<scalar_t>();
      at::parallel_for(0, l.numel(), 4096, [&](int64_t begin, int64_t end) {
        for (int64_t e = begin; e < end; ++e) {
          const int64_t i = interval(x[e], T, w, K);
          const double offset = static_cast<double>(x[e]) - (-T + static_cast<double>(i) * w);
          o[e] = static_cast<scalar_t>(yp[i] + sp[i] * offset);
        }
      });
    });
    detail::fused_result("plif", out);
  } else {
    auto i = interval_of(l, K, T);
    auto offset = l.to(torch::kFloat64) - (-T + i.to(torch::kFloat64) * w);
    out = (y.index({i}) + slopes.to(torch::kFloat64).index({i}) * offset).to(l.scalar_type());
  }
  return out;
}

// ∂/∂logits and ∂/∂slopes for the incoming gradient g (like l). With in_place, the logits'
// gradient is written over g (contiguous, l's dtype; the fused kernels read each element of g
// before they write it; the ATen path computes it apart).
std::pair<torch::Tensor, torch::Tensor> plif_gradients(const torch::Tensor& l, const torch::Tensor& slopes,
                                                       torch::Tensor g, double T, bool fused, bool in_place) {
  const int64_t K = slopes.size(0);
  const double w = 2 * T / static_cast<double>(K);
#ifdef LMKIT_OPS_CUDA
  if (fused && l.is_cuda()) {
    auto [grad_l, grad_s] = cuda::plif_backward(l, slopes, g, T, in_place ? g : torch::Tensor());
    grad_s = grad_s.to(slopes.scalar_type());
    detail::fused_result("plif", grad_l);
    detail::fused_result("plif", grad_s);
    return {grad_l, grad_s};
  }
#endif
  g = g.contiguous();
  torch::Tensor grad_l, grad_s;
  if (fused && l.device().is_cpu()) {
    grad_l = in_place ? g : torch::empty_like(l);
    auto s = slopes.to(torch::kFloat64).contiguous();
    const double* sp = s.data_ptr<double>();
    std::vector<double> offset_sum(K, 0.0), grad_sum(K, 0.0);
    AT_DISPATCH_FLOATING_TYPES(l.scalar_type(), "plif_backward_cpu", [&] {
      const scalar_t* x = l.data_ptr<scalar_t>();
      const scalar_t* gy = g.data_ptr<scalar_t>();
      scalar_t* gx = grad_l.data_ptr<scalar_t>();
      // Sequential on purpose: a fixed summation order makes the slope gradients reproducible.
      for (int64_t e = 0, n = l.numel(); e < n; ++e) {
        const int64_t i = interval(x[e], T, w, K);
        const double ge = static_cast<double>(gy[e]);
        gx[e] = static_cast<scalar_t>(ge * sp[i]);
        offset_sum[i] += ge * (static_cast<double>(x[e]) - (-T + static_cast<double>(i) * w));
        grad_sum[i] += ge;
      }
    });
    auto gs = torch::empty({K}, l.options().dtype(torch::kFloat64));
    double* out = gs.data_ptr<double>();
    double later = 0;  // later = Σ_{i>j} grad_sum[i]
    for (int64_t j = K - 1; j >= 0; --j) {
      out[j] = offset_sum[j] + w * later;
      later += grad_sum[j];
    }
    out[0] += -T * later;  // later is now Σ_i grad_sum[i]
    grad_s = gs.to(slopes.scalar_type());
    detail::fused_result("plif", grad_l);
    detail::fused_result("plif", grad_s);
  } else {
    auto i = interval_of(l, K, T).view(-1);
    auto gd = g.to(torch::kFloat64).view(-1);
    auto offset = l.to(torch::kFloat64).view(-1) - (-T + i.to(torch::kFloat64) * w);
    grad_l = g * slopes.index({i.view(l.sizes())});
    auto offset_sum = torch::zeros({K}, gd.options()).index_add_(0, i, gd * offset);
    auto grad_sum = torch::zeros({K}, gd.options()).index_add_(0, i, gd);
    auto later = grad_sum.sum() - grad_sum.cumsum(0);  // Σ_{i>j}, without flip (no meta kernel in Torch 1.13)
    grad_s = offset_sum + w * later;
    grad_s[0] += -T * gd.sum();
    grad_s = grad_s.to(slopes.scalar_type());
  }
  return {grad_l, grad_s};
}

class Plif : public torch::autograd::Function<Plif> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& logits,
                               const torch::Tensor& slopes, double T, bool fused) {
    auto l = logits.contiguous();
    ctx->save_for_backward({l, slopes});
    ctx->saved_data["T"] = T;
    ctx->saved_data["fused"] = fused;
    return plif_values(l, slopes, T, fused);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    auto [grad_l, grad_s] = plif_gradients(saved[0], saved[1], grads[0], ctx->saved_data["T"].toDouble(),
                                           ctx->saved_data["fused"].toBool(), /*in_place=*/false);
    return {grad_l, grad_s, torch::Tensor(), torch::Tensor()};
  }
};

// −log_softmax(f(l))[m, t_m] with the op's own kernels. Forward holds one full-size tensor, f(l),
// turned into exp(f − max) in place for the rows' log-sum-exp; what is saved is l and the rows'
// log-sum-exp. Backward computes f(l) again into the one full-size tensor it returns:
// g_m·(softmax(f)[m, j] − [j = t_m]), from which the slope sums are read and over which the
// logits' gradient is written. Autograd through plif() and log_softmax holds f, log_softmax's
// output and both their gradients instead.
class PlifNll : public torch::autograd::Function<PlifNll> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& logits,
                               const torch::Tensor& slopes, const torch::Tensor& targets, double T) {
    auto l = logits.contiguous();
    const auto column = targets.reshape({-1, 1});
    auto f = plif_values(l, slopes, T, /*fused=*/true);
    const auto target_f = f.gather(1, column).squeeze(1);
    const auto row_max = std::get<0>(f.max(1, /*keepdim=*/true));
    f.sub_(row_max).exp_();
    const auto lse = f.sum(1).log_().add_(row_max.squeeze(1));
    ctx->save_for_backward({l, slopes, column, lse});
    ctx->saved_data["T"] = T;
    return lse - target_f;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& l = saved[0];
    const auto& slopes = saved[1];
    const auto& column = saved[2];
    const auto& lse = saved[3];
    const double T = ctx->saved_data["T"].toDouble();
    const auto g = grads[0].to(l.scalar_type()).reshape({-1, 1});
    auto grad = plif_values(l, slopes, T, /*fused=*/true);
    grad.sub_(lse.unsqueeze(1)).exp_().mul_(g);
    grad.scatter_add_(1, column, -g);
    auto [grad_l, grad_s] = plif_gradients(l, slopes, grad, T, /*fused=*/true, /*in_place=*/true);
    return {grad_l, grad_s, torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

namespace {

// What plif and plif_nll ask of their logits, slopes and T (`op` names the one called).
void check_plif_arguments(const std::string& op, const torch::Tensor& logits, const torch::Tensor& slopes, double T) {
  check_floating(logits, op.c_str(), "logits");
  check_floating(slopes, op.c_str(), "slopes");
  LMKIT_OP_CHECK(slopes.dim() == 1 && slopes.size(0) > 0, op + ": slopes must be a non-empty vector, got " + shape_of(slopes));
  LMKIT_OP_CHECK(T > 0, op + ": T must be positive");
  LMKIT_OP_CHECK(slopes.device() == logits.device(), op + ": logits and slopes on different devices");
}

}  // namespace

torch::Tensor plif(const torch::Tensor& logits, const torch::Tensor& slopes, double T) {
  check_plif_arguments("plif", logits, slopes, T);
  return Plif::apply(logits, slopes, T, detail::use_fused_kernel("plif", logits));
}

torch::Tensor plif_nll(const torch::Tensor& logits, const torch::Tensor& slopes, const torch::Tensor& targets, double T) {
  check_plif_arguments("plif_nll", logits, slopes, T);
  LMKIT_OP_CHECK(logits.dim() == 2 && logits.size(1) > 0,
                 "plif_nll: logits must be [rows, vocabulary] with a vocabulary of at least one word, got " + shape_of(logits));
  LMKIT_OP_CHECK(targets.scalar_type() == torch::kInt64 && targets.dim() == 1 && targets.size(0) == logits.size(0),
                 "plif_nll: targets must be one int64 id per row of the logits, got " + shape_of(targets) +
                     " for logits " + shape_of(logits));
  LMKIT_OP_CHECK(targets.device() == logits.device(), "plif_nll: logits and targets on different devices");
  // The ids are not read here: a training step never waits for the host (HostSyncTest); the
  // corpus's ids are checked against the vocabulary where they are made.
  if (!detail::use_fused_kernel("plif", logits)) {
    return -torch::log_softmax(plif(logits, slopes, T), 1).gather(1, targets.reshape({-1, 1})).squeeze(1);
  }
  return PlifNll::apply(logits, slopes, targets, T);
}

torch::Tensor plif_reference(const torch::Tensor& logits, const torch::Tensor& slopes, double T) {
  const int64_t K = slopes.size(0);
  const double w = 2 * T / static_cast<double>(K);
  auto y0 = -T * slopes.slice(0, 0, 1);
  auto y = torch::cat({y0, y0 + w * torch::cumsum(slopes.slice(0, 0, K - 1), 0)});
  auto i = interval_of(logits.detach(), K, T);
  auto offset = logits - (-T + i.to(logits.scalar_type()) * w);
  return y.index({i}) + slopes.index({i}) * offset;
}

namespace detail {

// K = 2,500 pieces over [−10, 10] (more slopes than a CUDA block's threads, not a multiple of it)
// with slopes in (0.5, 1.5), 5,000 logits of scale 6 (both end pieces reached) and 1,000 around
// ±1000: forward, ∂/∂logits and ∂/∂slopes under a random upstream. ∂/∂slopes[0] carries −T·Σg and
// is compared apart, so that its size does not hide the other slopes' errors.
std::vector<CheckedOutput> plif_check_cases(const torch::Device& device, torch::ScalarType dtype, bool fused) {
  const double T = 10;
  const int64_t K = 2500;
  std::vector<CheckedOutput> outputs;
  const std::tuple<const char*, int64_t, double> cases[] = {{"logits N(0, 6²)", 5000, 6.0},
                                                            {"logits ±1000", 1000, 1000.0}};
  uint64_t seed = 11;
  for (const auto& [label, n, scale] : cases) {
    const auto x = check_values({n}, seed++, scale).to(dtype).to(torch::kFloat64);
    const auto s = (0.5 + check_values({K}, seed++, 1.0).sigmoid()).to(dtype).to(torch::kFloat64);
    const auto upstream = check_values({n}, seed++, 1.0);
    auto checked_x = x.to(device, dtype).requires_grad_();
    auto checked_s = s.to(device, dtype).requires_grad_();
    auto reference_x = x.to(device).requires_grad_();
    auto reference_s = s.to(device).requires_grad_();
    const auto checked = Plif::apply(checked_x, checked_s, T, fused);
    const auto reference = Plif::apply(reference_x, reference_s, T, false);
    const auto checked_grads = torch::autograd::grad({checked}, {checked_x, checked_s}, {upstream.to(device, dtype)});
    const auto reference_grads = torch::autograd::grad({reference}, {reference_x, reference_s}, {upstream.to(device)});
    outputs.push_back({std::string("forward (") + label + ")", checked, reference});
    outputs.push_back({std::string("∂/∂logits (") + label + ")", checked_grads[0], reference_grads[0]});
    outputs.push_back({std::string("∂/∂slopes[0] (") + label + ")", checked_grads[1].narrow(0, 0, 1),
                       reference_grads[1].narrow(0, 0, 1)});
    outputs.push_back({std::string("∂/∂slopes[1:] (") + label + ")", checked_grads[1].narrow(0, 1, K - 1),
                       reference_grads[1].narrow(0, 1, K - 1)});
  }
  return outputs;
}

}  // namespace detail
}  // namespace lmkit::ops

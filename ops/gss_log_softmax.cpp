#include "ops/gss_log_softmax.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/check.h"
#include "ops/kernel_check.h"
#ifdef LMKIT_OPS_CUDA
#include "ops/cuda/dispatch.h"
#endif

namespace lmkit::ops {
namespace {

template <typename scalar_t>
inline scalar_t softplus(scalar_t x) {
  // max(x, 0) + log1p(exp(−|x|)): never exponentiates a large positive number.
  return std::max(x, scalar_t(0)) + std::log1p(std::exp(-std::abs(x)));
}

template <typename scalar_t>
inline scalar_t sigmoid(scalar_t x) {
  if (x >= 0) return scalar_t(1) / (scalar_t(1) + std::exp(-x));
  const scalar_t e = std::exp(x);
  return e / (scalar_t(1) + e);
}

void forward_cpu(const torch::Tensor& l, torch::Tensor& out, double c, double k) {
  const int64_t n = l.size(-1);
  const int64_t rows = n == 0 ? 0 : l.numel() / n;
  AT_DISPATCH_FLOATING_TYPES(l.scalar_type(), "gss_log_softmax_cpu", [&] {
    const scalar_t* in = l.data_ptr<scalar_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    const scalar_t cc = static_cast<scalar_t>(c), kk = static_cast<scalar_t>(k);
    at::parallel_for(0, rows, 16, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const scalar_t* x = in + r * n;
        scalar_t* y = o + r * n;
        scalar_t max = -std::numeric_limits<scalar_t>::infinity();
        for (int64_t i = 0; i < n; ++i) {
          const scalar_t u = x[i] - cc;
          y[i] = kk * u + cc - (kk - 1) * softplus(u);
          max = std::max(max, y[i]);
        }
        double sum = 0;  // accumulated in double: N is up to ~1e5 terms
        for (int64_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(y[i] - max));
        // (y − max) − log Σ, not y − (max + log Σ): near ±1e4 a float32 shift would round at its
        // own ulp (~1e-3) and rows would sum to 1 only within ~5e-4.
        const scalar_t log_sum = static_cast<scalar_t>(std::log(sum));
        for (int64_t i = 0; i < n; ++i) y[i] = (y[i] - max) - log_sum;
      }
    });
  });
}

void backward_cpu(const torch::Tensor& l, const torch::Tensor& out, const torch::Tensor& g,
                  torch::Tensor& grad, double c, double k) {
  const int64_t n = l.size(-1);
  const int64_t rows = n == 0 ? 0 : l.numel() / n;
  AT_DISPATCH_FLOATING_TYPES(l.scalar_type(), "gss_log_softmax_backward_cpu", [&] {
    const scalar_t* x = l.data_ptr<scalar_t>();
    const scalar_t* y = out.data_ptr<scalar_t>();
    const scalar_t* gy = g.data_ptr<scalar_t>();
    scalar_t* gx = grad.data_ptr<scalar_t>();
    const scalar_t cc = static_cast<scalar_t>(c), kk = static_cast<scalar_t>(k);
    at::parallel_for(0, rows, 16, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const int64_t base = r * n;
        double total = 0;
        for (int64_t i = 0; i < n; ++i) total += gy[base + i];
        const scalar_t G = static_cast<scalar_t>(total);
        for (int64_t i = 0; i < n; ++i) {
          const scalar_t dz = gy[base + i] - std::exp(y[base + i]) * G;
          gx[base + i] = dz * (kk - (kk - 1) * sigmoid(x[base + i] - cc));
        }
      }
    });
  });
}

class GssLogSoftmax : public torch::autograd::Function<GssLogSoftmax> {
 public:
  // fused: run lmkit's own kernel for this device (the CPU's or CUDA's); else the ATen composite.
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& logits,
                               double c, double k, bool fused) {
    ctx->saved_data["c"] = c;
    ctx->saved_data["k"] = k;
    ctx->saved_data["fused"] = fused;
    torch::Tensor out;
#ifdef LMKIT_OPS_CUDA
    if (fused && logits.is_cuda()) {
      auto l = logits.contiguous();
      out = cuda::gss_log_softmax_forward(l, c, k);
      detail::fused_result("gss_log_softmax", out);
      ctx->save_for_backward({l, out});
      return out;
    }
#endif
    if (fused && logits.device().is_cpu()) {
      auto l = logits.contiguous();
      out = torch::empty_like(l);
      forward_cpu(l, out, c, k);
      detail::fused_result("gss_log_softmax", out);
      ctx->save_for_backward({l, out});
    } else {
      out = torch::log_softmax(gss_transform(logits, c, k), -1);
      ctx->save_for_backward({logits, out});
    }
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& l = saved[0];
    const auto& out = saved[1];
    const double c = ctx->saved_data["c"].toDouble();
    const double k = ctx->saved_data["k"].toDouble();
    const bool fused = ctx->saved_data["fused"].toBool();
    torch::Tensor grad;
#ifdef LMKIT_OPS_CUDA
    if (fused && l.is_cuda()) grad = cuda::gss_log_softmax_backward(l, out, grads[0], c, k);
#endif
    if (fused && l.device().is_cpu()) {
      auto g = grads[0].contiguous();
      grad = torch::empty_like(l);
      backward_cpu(l, out, g, grad, c, k);
    } else if (!grad.defined()) {
      const auto& g = grads[0];
      grad = (g - out.exp() * g.sum(-1, true)) * (k - (k - 1) * torch::sigmoid(l - c));
    }
    if (fused) detail::fused_result("gss_log_softmax", grad);
    return {grad, torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor gss_transform(const torch::Tensor& logits, double c, double k) {
  auto u = logits - c;
  return k * u + c - (k - 1) * torch::softplus(u);
}

torch::Tensor gss_log_softmax(const torch::Tensor& logits, double c, double k) {
  check_floating(logits, "gss_log_softmax", "logits");
  LMKIT_OP_CHECK(logits.dim() >= 1 && logits.size(-1) > 0, "gss_log_softmax: logits need a non-empty last dimension");
  return GssLogSoftmax::apply(logits, c, k, detail::use_fused_kernel("gss_log_softmax", logits));
}

namespace detail {

// GSS(0.4, 1.7) on rows of 1,537 words (longer than a CUDA block of 1,024 threads), once with
// logits of a typical scale and once around ±1000, forward and ∂/∂logits under a random upstream.
std::vector<CheckedOutput> gss_log_softmax_check_cases(const torch::Device& device, torch::ScalarType dtype, bool fused) {
  const double c = 0.4, k = 1.7;
  std::vector<CheckedOutput> outputs;
  const std::pair<const char*, double> cases[] = {{"logits N(0, 3²)", 3.0}, {"logits ±1000", 1000.0}};
  uint64_t seed = 1;
  for (const auto& [label, scale] : cases) {
    const auto x = check_values({3, 1537}, seed++, scale).to(dtype).to(torch::kFloat64);
    const auto upstream = check_values({3, 1537}, seed++, 1.0);
    auto checked_in = x.to(device, dtype).requires_grad_();
    auto reference_in = x.to(device).requires_grad_();
    const auto checked = GssLogSoftmax::apply(checked_in, c, k, fused);
    const auto reference = GssLogSoftmax::apply(reference_in, c, k, false);
    const auto checked_grad = torch::autograd::grad({checked}, {checked_in}, {upstream.to(device, dtype)})[0];
    const auto reference_grad = torch::autograd::grad({reference}, {reference_in}, {upstream.to(device)})[0];
    outputs.push_back({std::string("forward (") + label + ")", checked, reference});
    outputs.push_back({std::string("∂/∂logits (") + label + ")", checked_grad, reference_grad});
  }
  return outputs;
}

}  // namespace detail

}  // namespace lmkit::ops

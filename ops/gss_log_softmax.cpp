#include "ops/gss_log_softmax.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/check.h"
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
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& logits,
                               double c, double k) {
    ctx->saved_data["c"] = c;
    ctx->saved_data["k"] = k;
#ifdef LMKIT_OPS_CUDA
    if (logits.is_cuda()) {
      auto l = logits.contiguous();
      auto out = cuda::gss_log_softmax_forward(l, c, k);
      ctx->save_for_backward({l, out});
      return out;
    }
#endif
    torch::Tensor out;
    if (logits.device().is_cpu()) {
      auto l = logits.contiguous();
      out = torch::empty_like(l);
      forward_cpu(l, out, c, k);
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
#ifdef LMKIT_OPS_CUDA
    if (l.is_cuda()) return {cuda::gss_log_softmax_backward(l, out, grads[0], c, k), torch::Tensor(), torch::Tensor()};
#endif
    torch::Tensor grad;
    if (l.device().is_cpu()) {
      auto g = grads[0].contiguous();
      grad = torch::empty_like(l);
      backward_cpu(l, out, g, grad, c, k);
    } else {
      const auto& g = grads[0];
      grad = (g - out.exp() * g.sum(-1, true)) * (k - (k - 1) * torch::sigmoid(l - c));
    }
    return {grad, torch::Tensor(), torch::Tensor()};
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
  return GssLogSoftmax::apply(logits, c, k);
}

}  // namespace lmkit::ops

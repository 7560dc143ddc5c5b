#include "ops/mixture_nll.h"

#include "ops/check.h"
#include "ops/gss_log_softmax.h"
#include "ops/kernel_check.h"
#include "runtime/core/number_text.h"
#ifdef LMKIT_OPS_CUDA
#include "ops/cuda/dispatch.h"
#endif

namespace lmkit::ops {
namespace {

torch::Tensor component_logits(const torch::Tensor& h, const torch::Tensor& weight, const torch::Tensor& bias) {
  return bias.defined() ? torch::addmm(bias, h, weight.t()) : torch::mm(h, weight.t());
}

// l = h·Eᵀ + b written into `out` [M, N].
torch::Tensor& logits_into(torch::Tensor& out, const torch::Tensor& h, const torch::Tensor& weight,
                           const torch::Tensor& bias) {
  return torch::addmm_out(out, bias, h, weight.t());
}

class MixtureNll : public torch::autograd::Function<MixtureNll> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& latent,
                               const torch::Tensor& log_prior, const torch::Tensor& weight,
                               const torch::Tensor& bias, const torch::Tensor& targets, double c,
                               double kappa, bool fused) {
    const int64_t K = latent.size(1);
    auto t = targets.view({-1, 1});
    // Per component: a (log π + log P(t)), and the normaliser kept as two parts, the row's max and
    // log Σ exp(z − max). Their float32 sum (≈ ±1e3 at large logits, spacing 1e-4) would make the
    // backward's p = exp(z − lse) off by that much relative; (z − max) − log_sum keeps it ~1e-7.
    torch::Tensor a, row_max, log_sum;
    // One [M, N] buffer for all K blocks: re-allocating vocabulary-sized blocks per component
    // costs page faults on CPU (docs: cpu-performance notes).
    auto block = torch::empty({latent.size(0), weight.size(0)}, latent.options());
    torch::Tensor shifted;  // CPU: z − max, the same size, allocated once
#ifdef LMKIT_OPS_CUDA
    if (fused && latent.is_cuda()) {
      // The GEMM stays with cuBLAS; one kernel then does the transform, logsumexp and gather.
      a = torch::empty({latent.size(0), K}, latent.options());
      row_max = torch::empty({latent.size(0), K}, latent.options());
      log_sum = torch::empty({latent.size(0), K}, latent.options());
      for (int64_t k = 0; k < K; ++k) {
        logits_into(block, latent.select(1, k), weight, bias);
        cuda::mixture_component_forward(block, log_prior, targets, a, row_max, log_sum, k, c, kappa);
      }
    }
#endif
    if (!a.defined()) {
      a = torch::empty_like(log_prior);
      row_max = torch::empty_like(log_prior);
      log_sum = torch::empty_like(log_prior);
      for (int64_t k = 0; k < K; ++k) {
        auto z = logits_into(block, latent.select(1, k), weight, bias);
        if (kappa != 1.0) z = gss_transform(z, c, kappa);
        // log P(t) = (z_t − max) − log Σ exp(z − max): near ±1e4 the float32 sum max + log Σ
        // rounds at its ulp (~1e-3), so the two stay apart, here and for the backward.
        const auto max = std::get<0>(z.max(1, /*keepdim=*/true));
        if (!shifted.defined()) shifted = torch::empty_like(z);
        const auto log_sum_k = torch::sub_out(shifted, z, max).exp_().sum(1).log_();
        row_max.select(1, k).copy_(max.squeeze(1));
        log_sum.select(1, k).copy_(log_sum_k);
        a.select(1, k).copy_(log_prior.select(1, k) + ((z.gather(1, t) - max).squeeze(1) - log_sum_k));
      }
    }
    auto nll = -torch::logsumexp(a, 1);
    if (fused) detail::fused_result("mixture_nll", nll);
    ctx->save_for_backward({latent, log_prior, weight, bias, targets, a, row_max, log_sum});
    ctx->saved_data["c"] = c;
    ctx->saved_data["kappa"] = kappa;
    ctx->saved_data["fused"] = fused;
    return nll;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto s = ctx->get_saved_variables();
    const auto &latent = s[0], &weight = s[2], &bias = s[3], &targets = s[4], &a = s[5];
    const auto &row_max = s[6], &log_sum = s[7];
    const double c = ctx->saved_data["c"].toDouble();
    const double kappa = ctx->saved_data["kappa"].toDouble();
    const bool fused = ctx->saved_data["fused"].toBool();
    const int64_t K = latent.size(1);
    auto t = targets.view({-1, 1});
    auto coef = -grads[0].unsqueeze(1) * torch::softmax(a, 1);  // [M, K]: −g·r
    auto grad_latent = torch::empty_like(latent);
    auto grad_weight = torch::zeros_like(weight);
    auto grad_bias = bias.defined() ? torch::zeros_like(bias) : torch::Tensor();
    auto block = torch::empty({latent.size(0), weight.size(0)}, latent.options());
    for (int64_t k = 0; k < K; ++k) {
      auto h = latent.select(1, k);
      auto l = logits_into(block, h, weight, bias);
      torch::Tensor gz;
#ifdef LMKIT_OPS_CUDA
      if (fused && l.is_cuda()) {
        cuda::mixture_component_backward(l, row_max, log_sum, coef, targets, k, c, kappa);
        gz = l;
      }
#endif
      if (!gz.defined()) {
        auto z = kappa != 1.0 ? gss_transform(l, c, kappa) : l;
        auto ck = coef.select(1, k).unsqueeze(1);  // [M, 1]
        // ∂/∂z = ck·(onehot − p), built in place in z's buffer; p = exp((z − max) − log_sum).
        gz = z.sub_(row_max.select(1, k).unsqueeze(1)).sub_(log_sum.select(1, k).unsqueeze(1)).exp_().mul_(-ck);
        gz.scatter_add_(1, t, ck);
        if (kappa != 1.0) gz.mul_(kappa - (kappa - 1) * torch::sigmoid(l - c));
      }
      grad_latent.select(1, k).copy_(torch::mm(gz, weight));
      grad_weight.addmm_(gz.t(), h);
      if (grad_bias.defined()) grad_bias.add_(gz.sum(0));
    }
    if (fused) {
      detail::fused_result("mixture_nll", grad_latent);
      detail::fused_result("mixture_nll", grad_weight);
    }
    return {grad_latent, coef, grad_weight, grad_bias, torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor mixture_nll(const torch::Tensor& latent, const torch::Tensor& log_prior,
                          const torch::Tensor& weight, const torch::Tensor& bias,
                          const torch::Tensor& targets, double c, double kappa) {
  check_floating(latent, "mixture_nll", "latent");
  LMKIT_OP_CHECK(latent.dim() == 3, "mixture_nll: latent must be [M, K, d], got " + shape_of(latent));
  const auto M = latent.size(0), K = latent.size(1), d = latent.size(2);
  LMKIT_OP_CHECK(log_prior.dim() == 2 && log_prior.size(0) == M && log_prior.size(1) == K,
                 "mixture_nll: log_prior must be [M, K] = [" + integer_text(M) + ", " + integer_text(K) + "], got " + shape_of(log_prior));
  LMKIT_OP_CHECK(weight.dim() == 2 && weight.size(1) == d,
                 "mixture_nll: weight must be [N, " + integer_text(d) + "], got " + shape_of(weight));
  LMKIT_OP_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == weight.size(0)),
                 "mixture_nll: bias must be [N], got " + shape_of(bias));
  LMKIT_OP_CHECK(targets.scalar_type() == torch::kInt64 && targets.numel() == M,
                 "mixture_nll: targets must be int64 with M = " + integer_text(M) + " entries");
  // autograd::Function cannot take an undefined tensor input: a zero bias stands in (its gradient
  // is computed and dropped; N floats).
  const auto b = bias.defined() ? bias : torch::zeros({weight.size(0)}, weight.options());
  return MixtureNll::apply(latent, log_prior, weight, b, targets.reshape({-1}), c, kappa,
                           detail::use_fused_kernel("mixture_nll", latent));
}

torch::Tensor mixture_log_probs(const torch::Tensor& latent, const torch::Tensor& log_prior,
                                const torch::Tensor& weight, const torch::Tensor& bias, double c,
                                double kappa) {
  torch::Tensor acc;
  for (int64_t k = 0; k < latent.size(1); ++k) {
    auto l = component_logits(latent.select(1, k), weight, bias);
    auto logp = (kappa != 1.0 ? gss_log_softmax(l, c, kappa) : torch::log_softmax(l, 1)) +
                log_prior.select(1, k).unsqueeze(1);
    acc = acc.defined() ? torch::logaddexp(acc, logp) : logp;
  }
  return acc;
}

namespace detail {

// M = 6 contexts, K = 3 components of d = 8 over N = 1,537 words (a row longer than a CUDA block),
// with a bias; as MoS (κ = 1) and as MoSS (GSS(0.3, 1.7) components), each with logits of a typical
// scale and around ±1000 (the CUDA kernel branches on κ): the NLL and its gradients for the latent states, the log
// priors, the decoder weight and the bias under a random upstream.
std::vector<CheckedOutput> mixture_nll_check_cases(const torch::Device& device, torch::ScalarType dtype, bool fused) {
  const int64_t M = 6, K = 3, d = 8, N = 1537;
  std::vector<CheckedOutput> outputs;
  const std::tuple<const char*, double, double, double> cases[] = {{"MoS, logits of scale 1", 0.0, 1.0, 1.0},
                                                                   {"MoS, logits ±1000", 0.0, 1.0, 1000.0},
                                                                   {"MoSS, logits of scale 1", 0.3, 1.7, 1.0},
                                                                   {"MoSS, logits ±1000", 0.3, 1.7, 1000.0}};
  uint64_t seed = 21;
  for (const auto& [label, c, kappa, scale] : cases) {
    auto rounded = [&](const torch::Tensor& t) { return t.to(dtype).to(torch::kFloat64); };
    const auto latent = rounded(check_values({M, K, d}, seed++, 1.0));
    const auto log_prior = rounded(torch::log_softmax(check_values({M, K}, seed++, 1.0), 1));
    const auto weight = rounded(check_values({N, d}, seed++, scale / 3));
    const auto bias = rounded(check_values({N}, seed++, 1.0));
    const auto targets = (check_values({M}, seed++, 1.0).abs() * 1000).to(torch::kInt64).remainder(N);
    const auto upstream = check_values({M}, seed++, 1.0);
    std::vector<torch::Tensor> checked_in, reference_in;
    for (const auto& t : {latent, log_prior, weight, bias}) {
      checked_in.push_back(t.to(device, dtype).requires_grad_());
      reference_in.push_back(t.to(device).requires_grad_());
    }
    const auto checked = MixtureNll::apply(checked_in[0], checked_in[1], checked_in[2], checked_in[3],
                                           targets.to(device), c, kappa, fused);
    const auto reference = MixtureNll::apply(reference_in[0], reference_in[1], reference_in[2], reference_in[3],
                                             targets.to(device), c, kappa, false);
    const auto checked_grads = torch::autograd::grad({checked}, checked_in, {upstream.to(device, dtype)});
    const auto reference_grads = torch::autograd::grad({reference}, reference_in, {upstream.to(device)});
    const char* names[] = {"∂/∂latent", "∂/∂log_prior", "∂/∂weight", "∂/∂bias"};
    outputs.push_back({std::string("NLL (") + label + ")", checked, reference});
    for (std::size_t i = 0; i < 4; ++i) {
      outputs.push_back({std::string(names[i]) + " (" + label + ")", checked_grads[i], reference_grads[i]});
    }
  }
  return outputs;
}

}  // namespace detail
}  // namespace lmkit::ops

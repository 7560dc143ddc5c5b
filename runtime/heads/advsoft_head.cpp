#include "runtime/heads/advsoft_head.h"
#include "runtime/heads/head_registry.h"

namespace lmkit {

AdvSoftHeadImpl::AdvSoftHeadImpl(AdvSoftHeadOptions o) : options(o) {}

nlohmann::json AdvSoftHeadImpl::config() const { return declared_head_config(kind(), options); }

torch::Tensor AdvSoftHeadImpl::log_probs(const torch::Tensor& h, const Decoder& decoder) {
  return torch::log_softmax(decoder.logits(rows_of(h)), 1);
}

torch::Tensor AdvSoftHeadImpl::f_logits(const torch::Tensor& h, const Decoder& decoder) {
  return decoder.logits(rows_of(h));
}

torch::Tensor AdvSoftHeadImpl::nll(const torch::Tensor& h, const torch::Tensor& targets, const Decoder& decoder) {
  auto x = rows_of(h);
  auto l = decoder.logits(x);
  auto t = target_column(targets);
  if (!is_training() || options.eps() == 0) return torch::logsumexp(l, 1) - l.gather(1, t).squeeze(1);
  // δ_j = −ε_j·ĥ_j for every row, a constant of the backward pass.
  torch::Tensor delta;
  {
    torch::NoGradGuard no_grad;
    const auto xd = x.detach();
    auto radius = torch::full({xd.size(0), 1}, options.eps(), xd.options());
    if (options.relative() || options.aligned_only()) {
      const auto target_embedding = decoder.weight.detach().index_select(0, t.squeeze(1));
      if (options.relative()) radius = radius * target_embedding.norm(2, 1, true);
      // cos(h, e_t) > 0 ⇔ h·e_t > 0
      if (options.aligned_only()) radius = radius * ((xd * target_embedding).sum(1, true) > 0).to(radius.scalar_type());
    }
    // ĥ = 0 at h = 0 (the reference adds 1e-8 under its square root to the same effect).
    delta = -radius * (xd / xd.norm(2, 1, true).clamp_min(1e-12));
    if (options.perturbation() == "reference") {
      // The noise matrix's one row per word: each row takes the δ of its word's last occurrence.
      const auto words = t.squeeze(1);
      const auto rows = torch::arange(words.size(0), words.options());
      const auto last = torch::full({decoder.weight.size(0)}, -1, words.options())
                            .scatter_reduce(0, words, rows, "amax", /*include_self=*/true);
      delta = delta.index_select(0, last.index_select(0, words));
    }
  }
  auto target_logit = l.gather(1, t) + (x * delta).sum(1, true);
  auto perturbed = l.scatter(1, t, target_logit);
  return torch::logsumexp(perturbed, 1) - target_logit.squeeze(1);
}


const config::BoundOptions<AdvSoftHeadOptions>& declared_options(config::Tag<AdvSoftHeadOptions>) {
  using O = AdvSoftHeadOptions;
  static const config::BoundOptions<O> options("advsoft", [] {
    std::vector<config::BoundOption<O>> list = {
        LMKIT_BOUND_ACCESSOR(O, eps, Number, double, non_negative(), "the perturbation's size"),
        LMKIT_BOUND_ACCESSOR(O, relative, Boolean, bool, any(), "ε_t = eps·‖e_t‖"),
        LMKIT_BOUND_ACCESSOR(O, aligned_only, Boolean, bool, any(), "perturb only where cos(h, e_t) > 0"),
        LMKIT_BOUND_ACCESSOR(O, perturbation, String, std::string, any(),
                             "reference: one perturbation per word in a batch (its last occurrence's), as the "
                             "thesis's code; per_token: each token its own")};
    list.back().spec.one_of({"reference", "per_token"});
    return list;
  }());
  return options;
}

LMKIT_REGISTER_HEAD(advsoft) {
  return declared_head_kind<AdvSoftHeadImpl, AdvSoftHeadOptions>("advsoft",
          "Adversarial Softmax: while training, the target's output embedding e_t is moved by −ε_t·h/‖h‖; "
          "evaluation is Softmax. ε_t = eps (thesis eq. 3.23); relative=true makes it eps·‖e_t‖ and "
          "aligned_only=true perturbs only where cos(h, e_t) > 0, as the code behind thesis Tables A.1–A.3 "
          "(eps 0.005). The perturbation is a constant of the backward pass; perturbation=\"reference\" shares "
          "one per word in a batch (the thesis's code), \"per_token\" gives each token its own. Embedding noise "
          "is the model option emb_noise.",
          HeadCapabilities{/*projects=*/false, /*pointwise=*/true, /*monotone=*/true},
          {{{"eps", 0.1}}, {{"eps", 0.05}, {"relative", true}, {"aligned_only", true}}});
}

}  // namespace lmkit

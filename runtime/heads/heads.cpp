// The single-softmax heads (one transform of the logits each), the base class and the factory.
// Kept in one translation unit on purpose: each Torch TU costs ~20 s to compile on small machines.
#include <cmath>

#include "ops/gss_log_softmax.h"
#include "ops/plif.h"
#include "runtime/heads/advsoft_head.h"
#include "runtime/heads/gss_head.h"
#include "runtime/heads/head_registry.h"
#include "runtime/heads/moc_head.h"
#include "runtime/heads/mos_head.h"
#include "runtime/heads/moss_head.h"
#include "runtime/heads/plif_head.h"
#include "runtime/heads/relu_head.h"
#include "runtime/heads/sigmoid_head.h"
#include "runtime/heads/sigsoftmax_head.h"
#include "runtime/heads/softmax_head.h"

namespace lmkit {
namespace {

torch::Tensor target_column(const torch::Tensor& targets) { return targets.reshape({-1, 1}); }

}  // namespace

torch::Tensor HeadImpl::nll(const torch::Tensor& h, const torch::Tensor& targets, const Decoder& decoder) {
  return -log_probs(h, decoder).gather(1, target_column(targets)).squeeze(1);
}

torch::Tensor HeadImpl::f_logits(const torch::Tensor&, const Decoder&) { return {}; }

std::tuple<torch::Tensor, torch::Tensor> HeadImpl::top_k(const torch::Tensor& h, const Decoder& decoder, int64_t k) {
  auto result = log_probs(h, decoder).topk(k, 1);
  return {std::get<0>(result), std::get<1>(result)};
}

// --- Softmax -------------------------------------------------------------------------------------
torch::Tensor SoftmaxHeadImpl::log_probs(const torch::Tensor& h, const Decoder& decoder) {
  return torch::log_softmax(decoder.logits(rows_of(h)), 1);
}

torch::Tensor SoftmaxHeadImpl::f_logits(const torch::Tensor& h, const Decoder& decoder) {
  return decoder.logits(rows_of(h));
}

torch::Tensor SoftmaxHeadImpl::nll(const torch::Tensor& h, const torch::Tensor& targets, const Decoder& decoder) {
  auto l = decoder.logits(rows_of(h));
  return torch::logsumexp(l, 1) - l.gather(1, target_column(targets)).squeeze(1);
}


LMKIT_REGISTER_HEAD(softmax) {
  return {"softmax", "log_softmax(l), l = h·Eᵀ + b: the AWD-LSTM baseline.", {},
          HeadCapabilities{/*projects=*/false, /*pointwise=*/true, /*monotone=*/true},
          [](const HeadSettings&) { return make_head_of<SoftmaxHeadImpl>(); }};
}

// --- SigSoftmax, GSS -----------------------------------------------------------------------------
torch::Tensor SigSoftmaxHeadImpl::log_probs(const torch::Tensor& h, const Decoder& decoder) {
  return ops::gss_log_softmax(decoder.logits(rows_of(h)), 0.0, 2.0);
}

// k(l − c) + c − (k − 1)·softplus(l − c): the GSS transform (SigSoftmax: c = 0, k = 2).
static torch::Tensor gss_transform(const torch::Tensor& l, double c, double k) {
  return (l - c) * k + c - torch::softplus(l - c) * (k - 1);
}

torch::Tensor SigSoftmaxHeadImpl::f_logits(const torch::Tensor& h, const Decoder& decoder) {
  return gss_transform(decoder.logits(rows_of(h)), 0.0, 2.0);
}

GssHeadImpl::GssHeadImpl(GssHeadOptions o) : options(o) {}

nlohmann::json GssHeadImpl::config() const { return declared_head_config(kind(), options); }

torch::Tensor GssHeadImpl::log_probs(const torch::Tensor& h, const Decoder& decoder) {
  return ops::gss_log_softmax(decoder.logits(rows_of(h)), options.c(), options.k());
}


LMKIT_REGISTER_HEAD(sigsoftmax) {
  return {"sigsoftmax", "SigSoftmax: log_softmax(2l − softplus(l)) (fused op).", {},
          HeadCapabilities{/*projects=*/false, /*pointwise=*/true, /*monotone=*/true},
          [](const HeadSettings&) { return make_head_of<SigSoftmaxHeadImpl>(); }};
}

const config::BoundOptions<GssHeadOptions>& declared_options(config::Tag<GssHeadOptions>) {
  static const config::BoundOptions<GssHeadOptions> options(
      "gss", {LMKIT_BOUND_ACCESSOR(GssHeadOptions, c, Number, double, any(), "the knee: logits above c pass unchanged"),
              LMKIT_BOUND_ACCESSOR(GssHeadOptions, k, Number, double, positive(), "the slope below c")});
  return options;
}

LMKIT_REGISTER_HEAD(gss) {
  return declared_head_kind<GssHeadImpl, GssHeadOptions>(
      "gss",
      "Generalized SigSoftmax: log_softmax(k(l−c) + c − (k−1)·softplus(l−c)); GSS(0,2) = SigSoftmax, GSS(c,1) = Softmax.",
      HeadCapabilities{/*projects=*/false, /*pointwise=*/true, /*monotone=*/true}, {{{"c", -0.5}, {"k", 2.5}}});
}

// --- LMS-PLIF ------------------------------------------------------------------------------------
PlifHeadImpl::PlifHeadImpl(PlifHeadOptions o) : options(o) {
  // softplus(log(e − 1)) = 1: the slopes start at 1 plus noise.
  // host: a parameter made in the constructor; .to(device) moves the module with it
  auto init = torch::randn({o.K()}) * o.sigma() + std::log(std::exp(1.0) - 1.0);
  v = register_parameter("v", init, /*requires_grad=*/!o.freeze());
}

nlohmann::json PlifHeadImpl::config() const { return declared_head_config(kind(), options); }

torch::Tensor PlifHeadImpl::log_probs(const torch::Tensor& h, const Decoder& decoder) {
  auto l = decoder.logits(rows_of(h));
  return torch::log_softmax(ops::plif(l, slopes().to(l.scalar_type()), options.T()), 1);
}

torch::Tensor GssHeadImpl::f_logits(const torch::Tensor& h, const Decoder& decoder) {
  return gss_transform(decoder.logits(rows_of(h)), options.c(), options.k());
}

torch::Tensor PlifHeadImpl::f_logits(const torch::Tensor& h, const Decoder& decoder) {
  auto l = decoder.logits(rows_of(h));
  const auto s = slopes().to(l.scalar_type());
  auto f = ops::plif(l, s, options.T());
  return options.authors_offset() ? f + options.T() * s[0] : f;
}

std::vector<torch::Tensor> PlifHeadImpl::own_lr_parameters() {
  if (options.freeze()) return {};
  return {v};
}


const config::BoundOptions<PlifHeadOptions>& declared_options(config::Tag<PlifHeadOptions>) {
  using O = PlifHeadOptions;
  static const config::BoundOptions<O> options(
      "plif", {LMKIT_BOUND_ACCESSOR(O, K, Integer, int64_t, at_least(1), "the number of linear pieces"),
               LMKIT_BOUND_ACCESSOR(O, T, Number, double, positive(), "f is piecewise linear on [−T, T], linear outside"),
               LMKIT_BOUND_ACCESSOR(O, sigma, Number, double, non_negative(), "spread of the initial slopes' v"),
               LMKIT_BOUND_ACCESSOR(O, freeze, Boolean, bool, any(), "keep the slopes at their initial values"),
               LMKIT_BOUND_ACCESSOR(O, lr, Number, double, positive(), "the slopes' own learning rate"),
               LMKIT_BOUND_ACCESSOR(O, authors_offset, Boolean, bool, any(), "f-logits shifted so that f(−T) = 0")});
  return options;
}

LMKIT_REGISTER_HEAD(plif) {
  return declared_head_kind<PlifHeadImpl, PlifHeadOptions>("plif",
          "LMS-PLIF: log_softmax(f(l)), f piecewise linear increasing on K equal intervals of [−T, T], slopes "
          "softplus(v), v ~ N(log(e−1), σ²) (σ = 1 as the authors' code). The slopes train at their own rate lr "
          "(thesis 0.02; lmkit.train's own_lr overrides). freeze=true keeps the slopes at their initial values "
          "(LMS-PLIF†). authors_offset=true gives f-logits with f(−T) = 0 as the authors' code (log-probabilities "
          "are the same).",
          HeadCapabilities{/*projects=*/false, /*pointwise=*/true, /*monotone=*/true}, {{{"K", 50}, {"T", 5.0}, {"sigma", 0.3}}});
}

// --- ReLU-based, Sigmoid-based -------------------------------------------------------------------
ReluHeadImpl::ReluHeadImpl(ReluHeadOptions o) : options(o) {}

nlohmann::json ReluHeadImpl::config() const { return declared_head_config(kind(), options); }

torch::Tensor ReluHeadImpl::log_probs(const torch::Tensor& h, const Decoder& decoder) {
  auto u = torch::log(torch::relu(decoder.logits(rows_of(h))) + options.eps());
  return u - torch::logsumexp(u, 1, true);
}

torch::Tensor ReluHeadImpl::f_logits(const torch::Tensor& h, const Decoder& decoder) {
  return torch::log(torch::relu(decoder.logits(rows_of(h))) + options.eps());
}

torch::Tensor SigmoidHeadImpl::f_logits(const torch::Tensor& h, const Decoder& decoder) {
  return torch::log_sigmoid(decoder.logits(rows_of(h)));
}

torch::Tensor SigmoidHeadImpl::log_probs(const torch::Tensor& h, const Decoder& decoder) {
  auto u = torch::log_sigmoid(decoder.logits(rows_of(h)));
  return u - torch::logsumexp(u, 1, true);
}


const config::BoundOptions<ReluHeadOptions>& declared_options(config::Tag<ReluHeadOptions>) {
  static const config::BoundOptions<ReluHeadOptions> options(
      "relu", {LMKIT_BOUND_ACCESSOR(ReluHeadOptions, eps, Number, double, positive(), "ε, which keeps log away from log(0)")});
  return options;
}

LMKIT_REGISTER_HEAD(relu) {
  // relu(l) + ε is non-decreasing only: words with l ≤ 0 tie
  return declared_head_kind<ReluHeadImpl, ReluHeadOptions>("relu", "ReLU-based: log((relu(l)+ε) / Σ(relu(l)+ε)).",
                                                           HeadCapabilities{/*projects=*/false, /*pointwise=*/true, /*monotone=*/false});
}

LMKIT_REGISTER_HEAD(sigmoid) {
  return {"sigmoid", "Sigmoid-based: log_sigmoid(l) − logsumexp(log_sigmoid(l)).", {},
          HeadCapabilities{/*projects=*/false, /*pointwise=*/true, /*monotone=*/true},
          [](const HeadSettings&) { return make_head_of<SigmoidHeadImpl>(); }};
}

// --- AdvSoft -------------------------------------------------------------------------------------
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

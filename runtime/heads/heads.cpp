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

nlohmann::json GssHeadImpl::config() const { return {{"kind", kind()}, {"c", options.c()}, {"k", options.k()}}; }

torch::Tensor GssHeadImpl::log_probs(const torch::Tensor& h, const Decoder& decoder) {
  return ops::gss_log_softmax(decoder.logits(rows_of(h)), options.c(), options.k());
}


LMKIT_REGISTER_HEAD(sigsoftmax) {
  return {"sigsoftmax", "SigSoftmax: log_softmax(2l − softplus(l)) (fused op).", {},
          HeadCapabilities{/*projects=*/false, /*pointwise=*/true, /*monotone=*/true},
          [](const HeadSettings&) { return make_head_of<SigSoftmaxHeadImpl>(); }};
}

LMKIT_REGISTER_HEAD(gss) {
  const GssHeadOptions d;
  return {"gss",
          "Generalized SigSoftmax: log_softmax(k(l−c) + c − (k−1)·softplus(l−c)); GSS(0,2) = SigSoftmax, "
          "GSS(c,1) = Softmax.",
          {{"c", config::OptionType::Number, d.c(), config::Range::any(), "the knee: logits above c pass unchanged"},
           {"k", config::OptionType::Number, d.k(), config::Range::positive(), "the slope below c"}},
          HeadCapabilities{/*projects=*/false, /*pointwise=*/true, /*monotone=*/true},
          [](const HeadSettings& s) {
            return make_head_of<GssHeadImpl>(GssHeadOptions().c(s.number("c")).k(s.number("k")));
          },
          {{{"c", -0.5}, {"k", 2.5}}}};
}

// --- LMS-PLIF ------------------------------------------------------------------------------------
PlifHeadImpl::PlifHeadImpl(PlifHeadOptions o) : options(o) {
  // softplus(log(e − 1)) = 1: the slopes start at 1 plus noise.
  // host: a parameter made in the constructor; .to(device) moves the module with it
  auto init = torch::randn({o.K()}) * o.sigma() + std::log(std::exp(1.0) - 1.0);
  v = register_parameter("v", init, /*requires_grad=*/!o.freeze());
}

nlohmann::json PlifHeadImpl::config() const {
  return {{"kind", kind()},           {"K", options.K()},       {"T", options.T()},
          {"sigma", options.sigma()}, {"freeze", options.freeze()}, {"lr", options.lr()},
          {"authors_offset", options.authors_offset()}};
}

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


LMKIT_REGISTER_HEAD(plif) {
  const PlifHeadOptions d;
  using config::OptionType;
  using config::Range;
  return {"plif",
          "LMS-PLIF: log_softmax(f(l)), f piecewise linear increasing on K equal intervals of [−T, T], slopes "
          "softplus(v), v ~ N(log(e−1), σ²) (σ = 1 as the authors' code). The slopes train at their own rate lr "
          "(thesis 0.02; lmkit.train's own_lr overrides). freeze=true keeps the slopes at their initial values "
          "(LMS-PLIF†). authors_offset=true gives f-logits with f(−T) = 0 as the authors' code (log-probabilities "
          "are the same).",
          {{"K", OptionType::Integer, d.K(), Range::at_least(1), "the number of linear pieces"},
           {"T", OptionType::Number, d.T(), Range::positive(), "f is piecewise linear on [−T, T], linear outside"},
           {"sigma", OptionType::Number, d.sigma(), Range::non_negative(), "spread of the initial slopes' v"},
           {"freeze", OptionType::Boolean, d.freeze(), Range::any(), "keep the slopes at their initial values"},
           {"lr", OptionType::Number, d.lr(), Range::positive(), "the slopes' own learning rate"},
           {"authors_offset", OptionType::Boolean, d.authors_offset(), Range::any(),
            "f-logits shifted so that f(−T) = 0"}},
          HeadCapabilities{/*projects=*/false, /*pointwise=*/true, /*monotone=*/true},
          [](const HeadSettings& s) {
            return make_head_of<PlifHeadImpl>(PlifHeadOptions()
                                                  .K(s.integer("K"))
                                                  .T(s.number("T"))
                                                  .sigma(s.number("sigma"))
                                                  .freeze(s.flag("freeze"))
                                                  .lr(s.number("lr"))
                                                  .authors_offset(s.flag("authors_offset")));
          },
          {{{"K", 50}, {"T", 5.0}, {"sigma", 0.3}}}};
}

// --- ReLU-based, Sigmoid-based -------------------------------------------------------------------
ReluHeadImpl::ReluHeadImpl(ReluHeadOptions o) : options(o) {}

nlohmann::json ReluHeadImpl::config() const { return {{"kind", kind()}, {"eps", options.eps()}}; }

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


LMKIT_REGISTER_HEAD(relu) {
  return {"relu", "ReLU-based: log((relu(l)+ε) / Σ(relu(l)+ε)).",
          {{"eps", config::OptionType::Number, ReluHeadOptions().eps(), config::Range::positive(),
            "ε, which keeps log away from log(0)"}},
          // relu(l) + ε is non-decreasing only: words with l ≤ 0 tie
          HeadCapabilities{/*projects=*/false, /*pointwise=*/true, /*monotone=*/false},
          [](const HeadSettings& s) { return make_head_of<ReluHeadImpl>(ReluHeadOptions().eps(s.number("eps"))); }};
}

LMKIT_REGISTER_HEAD(sigmoid) {
  return {"sigmoid", "Sigmoid-based: log_sigmoid(l) − logsumexp(log_sigmoid(l)).", {},
          HeadCapabilities{/*projects=*/false, /*pointwise=*/true, /*monotone=*/true},
          [](const HeadSettings&) { return make_head_of<SigmoidHeadImpl>(); }};
}

// --- AdvSoft -------------------------------------------------------------------------------------
AdvSoftHeadImpl::AdvSoftHeadImpl(AdvSoftHeadOptions o) : options(o) {}

nlohmann::json AdvSoftHeadImpl::config() const {
  return {{"kind", kind()}, {"eps", options.eps()}, {"relative", options.relative()},
          {"aligned_only", options.aligned_only()}, {"perturbation", options.perturbation()}};
}

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


LMKIT_REGISTER_HEAD(advsoft) {
  const AdvSoftHeadOptions d;
  return {"advsoft",
          "Adversarial Softmax: while training, the target's output embedding e_t is moved by −ε_t·h/‖h‖; "
          "evaluation is Softmax. ε_t = eps (thesis eq. 3.23); relative=true makes it eps·‖e_t‖ and "
          "aligned_only=true perturbs only where cos(h, e_t) > 0, as the code behind thesis Tables A.1–A.3 "
          "(eps 0.005). The perturbation is a constant of the backward pass; perturbation=\"reference\" shares "
          "one per word in a batch (the thesis's code), \"per_token\" gives each token its own. Embedding noise "
          "is the model option emb_noise.",
          {{"eps", config::OptionType::Number, d.eps(), config::Range::non_negative(), "the perturbation's size"},
           {"relative", config::OptionType::Boolean, d.relative(), config::Range::any(), "ε_t = eps·‖e_t‖"},
           {"aligned_only", config::OptionType::Boolean, d.aligned_only(), config::Range::any(),
            "perturb only where cos(h, e_t) > 0"},
           config::OptionSpec("perturbation", config::OptionType::String, d.perturbation(), config::Range::any(),
                              "reference: one perturbation per word in a batch (its last occurrence's), as the "
                              "thesis's code; per_token: each token its own")
               .one_of({"reference", "per_token"})},
          HeadCapabilities{/*projects=*/false, /*pointwise=*/true, /*monotone=*/true},
          [](const HeadSettings& s) {
            return make_head_of<AdvSoftHeadImpl>(AdvSoftHeadOptions()
                                                     .eps(s.number("eps"))
                                                     .relative(s.flag("relative"))
                                                     .aligned_only(s.flag("aligned_only"))
                                                     .perturbation(s.text("perturbation")));
          },
          {{{"eps", 0.1}}, {{"eps", 0.05}, {"relative", true}, {"aligned_only", true}}}};
}

}  // namespace lmkit

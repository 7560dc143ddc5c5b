// The single-softmax heads (one transform of the logits each), the base class and the factory.
// Kept in one translation unit on purpose: each Torch TU costs ~20 s to compile on small machines.
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "ops/gss_log_softmax.h"
#include "ops/plif.h"
#include "runtime/config/json_numbers.h"
#include "runtime/core/number_text.h"
#include "runtime/core/error.h"
#include "runtime/heads/advsoft_head.h"
#include "runtime/heads/gss_head.h"
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

GssHeadImpl::GssHeadImpl(GssHeadOptions o) : options(o) {
  if (!(o.k() > 0)) throw ConfigError("gss: k must be positive (the slope below c), got " + describe_number(o.k()));
}

nlohmann::json GssHeadImpl::config() const { return {{"kind", kind()}, {"c", options.c()}, {"k", options.k()}}; }

torch::Tensor GssHeadImpl::log_probs(const torch::Tensor& h, const Decoder& decoder) {
  return ops::gss_log_softmax(decoder.logits(rows_of(h)), options.c(), options.k());
}

// --- LMS-PLIF ------------------------------------------------------------------------------------
PlifHeadImpl::PlifHeadImpl(PlifHeadOptions o) : options(o) {
  if (o.K() <= 0) throw ConfigError("plif: K must be positive, got " + std::to_string(o.K()));
  if (!(o.T() > 0)) throw ConfigError("plif: T must be positive");
  if (!(o.sigma() >= 0)) throw ConfigError("plif: sigma must be non-negative");
  if (!(o.lr() > 0)) throw ConfigError("plif: lr (the slopes' own learning rate) must be positive");
  // softplus(log(e − 1)) = 1: the slopes start at 1 plus noise.
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

// --- ReLU-based, Sigmoid-based -------------------------------------------------------------------
ReluHeadImpl::ReluHeadImpl(ReluHeadOptions o) : options(o) {
  if (!(o.eps() > 0)) throw ConfigError("relu: eps must be positive (log(0) otherwise)");
}

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

// --- AdvSoft -------------------------------------------------------------------------------------
AdvSoftHeadImpl::AdvSoftHeadImpl(AdvSoftHeadOptions o) : options(o) {
  if (o.eps() < 0) throw ConfigError("advsoft: eps must be non-negative");
}

nlohmann::json AdvSoftHeadImpl::config() const {
  return {{"kind", kind()}, {"eps", options.eps()}, {"relative", options.relative()},
          {"aligned_only", options.aligned_only()}};
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
  // h·δ* = −ε_t·‖h‖, written as −ε_t·(h·ĥ) with ĥ held constant: its gradient in h is −ε_t·ĥ
  // (also at h = 0, where ‖h‖'s own gradient is undefined).
  auto direction = (x / x.norm(2, 1, true).clamp_min(1e-12)).detach();
  auto shift = -options.eps() * (x * direction).sum(1, true);
  if (options.relative() || options.aligned_only()) {
    auto target_embedding = decoder.weight.index_select(0, t.squeeze(1));
    if (options.relative()) shift = shift * target_embedding.norm(2, 1, true);
    // cos(h, e_t) > 0 ⇔ h·e_t > 0
    if (options.aligned_only()) shift = shift * ((x * target_embedding).sum(1, true) > 0).to(shift.scalar_type());
  }
  auto target_logit = l.gather(1, t) + shift;
  auto perturbed = l.scatter(1, t, target_logit);
  return torch::logsumexp(perturbed, 1) - target_logit.squeeze(1);
}

// --- factory -------------------------------------------------------------------------------------
namespace {

// Checks that config has only `accepted` keys (besides "kind") and returns the number at key.
struct ConfigReader {
  const nlohmann::json& config;
  std::string kind;
  ConfigReader(const nlohmann::json& c, std::initializer_list<const char*> accepted) : config(c) {
    kind = c.at("kind").get<std::string>();
    std::set<std::string> ok(accepted.begin(), accepted.end());
    ok.insert("kind");
    for (auto it = c.begin(); it != c.end(); ++it) {
      if (!ok.count(it.key())) {
        std::string list;
        for (const auto& a : accepted) list += (list.empty() ? "" : ", ") + std::string(a);
        throw ConfigError("head '" + kind + "': unknown option '" + it.key() + "' (accepted: " +
                          (list.empty() ? "none" : list) + ")");
      }
    }
  }
  template <typename T>
  T get(const char* key, T fallback) const {
    if (!config.contains(key)) return fallback;
    return config::json_option<T>(config.at(key), "head '" + kind + "': option '" + key + "'");
  }
};

}  // namespace

std::vector<std::string> head_kinds() {
  return {"softmax", "sigsoftmax", "gss", "plif", "relu", "sigmoid", "mos", "moss", "moc", "advsoft"};
}

Head make_head(const nlohmann::json& config, int64_t in_dim, int64_t latent_dim) {
  if (!config.is_object() || !config.contains("kind") || !config.at("kind").is_string()) {
    throw ConfigError("a head config is an object with a string 'kind'");
  }
  const auto kind = config.at("kind").get<std::string>();
  if (kind == "softmax") {
    ConfigReader r(config, {});
    return make_head_of<SoftmaxHeadImpl>();
  }
  if (kind == "sigsoftmax") {
    ConfigReader r(config, {});
    return make_head_of<SigSoftmaxHeadImpl>();
  }
  if (kind == "sigmoid") {
    ConfigReader r(config, {});
    return make_head_of<SigmoidHeadImpl>();
  }
  if (kind == "gss") {
    ConfigReader r(config, {"c", "k"});
    return make_head_of<GssHeadImpl>(GssHeadOptions().c(r.get("c", 0.0)).k(r.get("k", 2.0)));
  }
  if (kind == "plif") {
    ConfigReader r(config, {"K", "T", "sigma", "freeze", "lr", "authors_offset"});
    // Configs written before lr/authors_offset existed load with their defaults.
    const PlifHeadOptions d;
    return make_head_of<PlifHeadImpl>(PlifHeadOptions()
                                          .K(r.get<int64_t>("K", d.K()))
                                          .T(r.get("T", d.T()))
                                          .sigma(r.get("sigma", d.sigma()))
                                          .freeze(r.get("freeze", d.freeze()))
                                          .lr(r.get("lr", d.lr()))
                                          .authors_offset(r.get("authors_offset", d.authors_offset())));
  }
  if (kind == "relu") {
    ConfigReader r(config, {"eps"});
    return make_head_of<ReluHeadImpl>(ReluHeadOptions().eps(r.get("eps", 1e-8)));
  }
  if (kind == "advsoft") {
    ConfigReader r(config, {"eps", "relative", "aligned_only"});
    // Configs written before relative/aligned_only existed load as eq. 3.23.
    const AdvSoftHeadOptions d;
    return make_head_of<AdvSoftHeadImpl>(AdvSoftHeadOptions()
                                             .eps(r.get("eps", d.eps()))
                                             .relative(r.get("relative", d.relative()))
                                             .aligned_only(r.get("aligned_only", d.aligned_only())));
  }
  if (kind == "mos" || kind == "moss" || kind == "moc") {
    ConfigReader r(config, {"K", "dropoutl"});
    auto o = MosHeadOptions(in_dim, latent_dim).K(r.get<int64_t>("K", 15)).dropoutl(r.get("dropoutl", 0.29));
    if (kind == "mos") return make_head_of<MosHeadImpl>(o);
    if (kind == "moss") return make_head_of<MossHeadImpl>(o);
    return make_head_of<MocHeadImpl>(o);
  }
  std::string list;
  for (const auto& k : head_kinds()) list += (list.empty() ? "" : ", ") + k;
  throw ConfigError("unknown head kind '" + kind + "' (known: " + list + ")");
}

}  // namespace lmkit

#include "bindings/lua_heads.h"

#include <fmt/format.h>

#include <cmath>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "bindings/lua_call.h"
#include "bindings/lua_tensor.h"
#include "runtime/core/error.h"
#include "runtime/tensor/tensor_format.h"

namespace lmkit::lua {
namespace {

thread_local lua_State* current_thread = nullptr;

lua_State* main_thread(lua_State* L) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
  lua_State* main = lua_tothread(L, -1);
  lua_pop(L, 1);
  return main;
}

// A Lua value kept alive in the registry for as long as this object lives.
class LuaRef {
 public:
  LuaRef(lua_State* L, int index) : L_(main_thread(L)) {
    lua_pushvalue(L, index);
    ref_ = luaL_ref(L, LUA_REGISTRYINDEX);
  }
  ~LuaRef() {
    if (ref_ != LUA_NOREF && ref_ != LUA_REFNIL) luaL_unref(L_, LUA_REGISTRYINDEX, ref_);
  }
  LuaRef(const LuaRef&) = delete;
  LuaRef& operator=(const LuaRef&) = delete;
  // The state to call in: the running binding's thread, else the main thread.
  lua_State* state() const { return current_thread ? current_thread : L_; }
  void push(lua_State* L) const { lua_rawgeti(L, LUA_REGISTRYINDEX, ref_); }

 private:
  lua_State* L_;
  int ref_ = LUA_NOREF;
};

class LuaCallbackError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Calls the function (already pushed, followed by nargs tensors) expecting one tensor back.
torch::Tensor call_for_tensor(lua_State* L, int nargs, const std::string& what) {
  const int base = lua_gettop(L) - nargs - 1;
  if (lua_pcall(L, nargs, 1, 0) != LUA_OK) {
    std::string message = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "(non-string error)";
    lua_settop(L, base);
    throw LuaCallbackError(message);
  }
  auto* t = test_tensor(L, -1);
  if (!t || !t->defined()) {
    const std::string got = luaL_typename(L, -1);
    lua_settop(L, base);
    throw LuaCallbackError(what + " must return a Tensor, got " + got);
  }
  torch::Tensor result = *t;
  lua_settop(L, base);
  return result;
}

std::string shape_of(const torch::Tensor& t) {
  std::string text = "[";
  for (std::int64_t i = 0; i < t.dim(); ++i) text += (i ? ", " : "") + std::to_string(t.size(i));
  return text + "]";
}

// What a Lua head returns is checked where it enters C++: a wrong width, rank or dtype would
// otherwise surface as a Torch error far away, or not at all (N+5 columns gave loss 0 / ppl 1).
void check_result_form(const torch::Tensor& result, const std::vector<std::int64_t>& expected,
                       torch::ScalarType dtype, const std::string& what) {
  if (result.sizes() != torch::IntArrayRef(expected) || result.scalar_type() != dtype) {
    std::string want = "[";
    for (std::size_t i = 0; i < expected.size(); ++i) want += (i ? ", " : "") + std::to_string(expected[i]);
    throw LuaCallbackError(what + " must return a " + dtype_name(dtype) + " Tensor of size " +
                           want + "], got " + dtype_name(result.scalar_type()) + " of size " +
                           shape_of(result));
  }
}

// Rows of log-probabilities have logsumexp 0. The tolerance admits float32 rounding over a large
// vocabulary (~1e-5) and nothing a real mistake produces (unnormalized logits are off by units).
constexpr double kNormalizationTolerance = 1e-3;

void check_normalized(const torch::Tensor& log_probs, const std::string& what) {
  if (log_probs.numel() == 0) return;
  torch::NoGradGuard no_grad;
  const auto deviation = log_probs.detach().logsumexp(1).abs();
  const auto [worst, row] = deviation.max(0);
  const double value = worst.item<double>();
  if (!(value <= kNormalizationTolerance)) {  // NaN fails too
    const auto lse = log_probs.detach()[row.item<std::int64_t>()].logsumexp(0).item<double>();
    throw LuaCallbackError(what + " must return log-probabilities (each row's logsumexp = 0, within " +
                           fmt::format("{:g}", kNormalizationTolerance) + "), but row " +
                           std::to_string(row.item<std::int64_t>() + 1) + " has logsumexp " + fmt::format("{:.6g}", lse) +
                           "; normalize with :log_softmax() (docs/lua-heads.md)");
  }
}

void push_optional_tensor(lua_State* L, const torch::Tensor& t) {
  if (t.defined()) {
    push_tensor(L, t);
  } else {
    lua_pushnil(L);
  }
}

// log_softmax(fn(l)) with fn a Lua function of the logits [M, N].
class LuaPointwiseHeadImpl : public HeadImpl {
 public:
  LuaPointwiseHeadImpl(lua_State* L, int index) : fn_(L, index) {}
  std::string kind() const override { return "pointwise"; }
  nlohmann::json config() const override { return {{"kind", kind()}}; }
  torch::Tensor log_probs(const torch::Tensor& h, const Decoder& decoder) override {
    auto l = decoder.logits(rows_of(h));
    lua_State* L = fn_.state();
    fn_.push(L);
    push_tensor(L, l);
    auto z = call_for_tensor(L, 1, "the pointwise head's function");
    check_result_form(z, l.sizes().vec(), l.scalar_type(), "the pointwise head's function (logits → f(logits))");
    return torch::log_softmax(z, 1);
  }

 private:
  LuaRef fn_;
};

// A head written in Lua: forward(h [M, d], weight [N, d], bias [N] or nil) → log-probs [M, N];
// optional nll(h, targets [M], weight, bias) → [M]; parameters registered as head parameters.
class LuaCustomHeadImpl : public HeadImpl {
 public:
  LuaCustomHeadImpl(lua_State* L, int table, std::string name) : name_(std::move(name)) {
    get_field_raw(L, table, "forward");
    forward_ = std::make_unique<LuaRef>(L, -1);
    lua_pop(L, 1);
    if (get_field_raw(L, table, "nll") == LUA_TFUNCTION) nll_ = std::make_unique<LuaRef>(L, -1);
    lua_pop(L, 1);
    if (get_field_raw(L, table, "parameters") == LUA_TTABLE) {
      const auto n = lua_rawlen(L, -1);
      for (lua_Unsigned i = 1; i <= n; ++i) {
        lua_rawgeti(L, -1, static_cast<lua_Integer>(i));
        auto* t = test_tensor(L, -1);
        lua_pop(L, 1);
        if (!t) {
          lua_pop(L, 1);
          throw UsageError("custom head: parameters[" + std::to_string(i) + "] is not a Tensor");
        }
        register_parameter("p" + std::to_string(i), *t, t->requires_grad());
      }
    }
    lua_pop(L, 1);
  }
  std::string kind() const override { return "custom"; }
  nlohmann::json config() const override { return {{"kind", kind()}, {"name", name_}}; }

  torch::Tensor log_probs(const torch::Tensor& h, const Decoder& decoder) override {
    lua_State* L = forward_->state();
    forward_->push(L);
    push_tensor(L, rows_of(h));
    push_tensor(L, decoder.weight);
    push_optional_tensor(L, decoder.bias);
    const std::string what = "custom head '" + name_ + "': forward(h, weight, bias)";
    auto log_probs = call_for_tensor(L, 3, what);
    check_result_form(log_probs, {rows_of(h).size(0), decoder.weight.size(0)}, h.scalar_type(), what);
    check_normalized(log_probs, what);
    return log_probs;
  }

  torch::Tensor nll(const torch::Tensor& h, const torch::Tensor& targets, const Decoder& decoder) override {
    if (!nll_) return HeadImpl::nll(h, targets, decoder);
    lua_State* L = nll_->state();
    nll_->push(L);
    push_tensor(L, rows_of(h));
    push_tensor(L, targets.reshape({-1}));
    push_tensor(L, decoder.weight);
    push_optional_tensor(L, decoder.bias);
    const std::string what = "custom head '" + name_ + "': nll(h, targets, weight, bias)";
    auto nll = call_for_tensor(L, 4, what);
    check_result_form(nll, {targets.numel()}, h.scalar_type(), what);
    if (nll.numel() == 0) return nll;
    torch::NoGradGuard no_grad;
    // −log p ≥ 0: a negative value means the probabilities behind it were not normalized.
    const double lowest = nll.detach().min().item<double>();
    if (!(lowest >= -kNormalizationTolerance)) {
      throw LuaCallbackError(what + " must return negative log-likelihoods (≥ 0), got " + fmt::format("{:.6g}", lowest) +
                             "; are its log-probabilities normalized?");
    }
    return nll;
  }

 private:
  std::string name_;
  std::unique_ptr<LuaRef> forward_, nll_;
};

// Pushes a spec table {kind = kind} with the HeadSpec metatable.
void push_spec(lua_State* L, const char* kind) {
  lua_createtable(L, 0, 4);
  lua_pushstring(L, kind);
  lua_setfield(L, -2, "kind");
  luaL_setmetatable(L, kHeadSpecMetatable);
}

template <const char* Kind>
int simple_spec(lua_State* L) {
  Options options(L, 1, {});
  push_spec(L, Kind);
  return 1;
}

constexpr char kSoftmax[] = "softmax";
constexpr char kSigSoftmax[] = "sigsoftmax";
constexpr char kSigmoid[] = "sigmoid";

void set_number(lua_State* L, const char* key, std::optional<double> value) {
  if (value) {
    lua_pushnumber(L, *value);
    lua_setfield(L, -2, key);
  }
}

void set_integer(lua_State* L, const char* key, std::optional<lua_Integer> value, lua_Integer minimum) {
  if (value) {
    if (*value < minimum) throw ArgError(1, std::string("option '") + key + "' must be >= " + std::to_string(minimum));
    lua_pushinteger(L, *value);
    lua_setfield(L, -2, key);
  }
}

void set_flags(lua_State* L, const Options& o, std::initializer_list<const char*> keys) {
  for (const char* key : keys) {
    if (const auto flag = o.boolean(key)) {
      lua_pushboolean(L, *flag);
      lua_setfield(L, -2, key);
    }
  }
}

int heads_gss(lua_State* L) {
  Options o(L, 1, {"c", "k"});
  const auto c = o.number("c");
  const auto k = o.number("k");
  if (k && !(*k > 0)) throw ArgError(1, "option 'k' must be positive");
  push_spec(L, "gss");
  set_number(L, "c", c);
  set_number(L, "k", k);
  return 1;
}

int heads_plif(lua_State* L) {
  Options o(L, 1, {"K", "T", "sigma", "freeze", "lr", "authors_offset"});
  const auto K = o.integer("K");
  const auto T = o.number("T");
  const auto sigma = o.number("sigma");
  const auto lr = o.number("lr");
  if (T && !(*T > 0)) throw ArgError(1, "option 'T' must be positive");
  if (sigma && !(*sigma >= 0)) throw ArgError(1, "option 'sigma' must be ≥ 0");
  if (lr && !(*lr > 0)) throw ArgError(1, "option 'lr' must be positive");
  push_spec(L, "plif");
  set_integer(L, "K", K, 1);
  set_number(L, "T", T);
  set_number(L, "sigma", sigma);
  set_number(L, "lr", lr);
  set_flags(L, o, {"freeze", "authors_offset"});
  return 1;
}

int heads_relu(lua_State* L) {
  Options o(L, 1, {"eps"});
  const auto eps = o.number("eps");
  if (eps && !(*eps > 0)) throw ArgError(1, "option 'eps' must be positive");
  push_spec(L, "relu");
  set_number(L, "eps", eps);
  return 1;
}

int heads_advsoft(lua_State* L) {
  Options o(L, 1, {"eps", "relative", "aligned_only"});
  const auto eps = o.number("eps");
  if (eps && !(*eps >= 0 && std::isfinite(*eps))) throw ArgError(1, "option 'eps' must be finite and non-negative");
  push_spec(L, "advsoft");
  set_number(L, "eps", eps);
  set_flags(L, o, {"relative", "aligned_only"});
  return 1;
}

template <const char* Kind, bool WithDropout>
int mixture_spec(lua_State* L) {
  Options o(L, 1, WithDropout ? std::initializer_list<const char*>{"K", "dropoutl"}
                              : std::initializer_list<const char*>{"K"});
  const auto K = o.integer("K");
  std::optional<double> dropoutl;
  if (WithDropout) dropoutl = o.number("dropoutl");
  if (dropoutl && !(*dropoutl >= 0 && *dropoutl < 1)) throw ArgError(1, "option 'dropoutl' must be in [0, 1)");
  push_spec(L, Kind);
  set_integer(L, "K", K, 1);
  set_number(L, "dropoutl", dropoutl);
  return 1;
}

constexpr char kMos[] = "mos";
constexpr char kMoss[] = "moss";
constexpr char kMoc[] = "moc";

int heads_pointwise(lua_State* L) {
  check_type(L, 1, LUA_TFUNCTION, "function");
  push_spec(L, "pointwise");
  lua_pushvalue(L, 1);
  lua_setfield(L, -2, "fn");
  return 1;
}

int heads_custom(lua_State* L) {
  check_type(L, 1, LUA_TTABLE, "table");
  lua_pushnil(L);
  while (lua_next(L, 1) != 0) {
    lua_pop(L, 1);
    const char* key = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : nullptr;
    const std::string k = key ? key : "";
    if (k != "forward" && k != "nll" && k != "parameters" && k != "name") {
      const std::string shown = key ? "'" + k + "'" : std::string("a ") + luaL_typename(L, -1) + " key";
      lua_pop(L, 1);
      throw ArgError(1, "unknown field " + shown + " (accepted: forward, nll, parameters, name)");
    }
  }
  const auto field_type = [&](const char* key) {
    const int type = get_field_raw(L, 1, key);
    lua_pop(L, 1);
    return type;
  };
  if (field_type("forward") != LUA_TFUNCTION) throw ArgError(1, "field 'forward' must be a function (h, weight, bias) -> log-probabilities");
  const int nll_type = field_type("nll");
  if (nll_type != LUA_TNIL && nll_type != LUA_TFUNCTION) throw ArgError(1, "field 'nll' must be a function");
  const int params_type = field_type("parameters");
  if (params_type != LUA_TNIL && params_type != LUA_TTABLE) throw ArgError(1, "field 'parameters' must be a list of Tensors");
  const int name_type = field_type("name");
  if (name_type != LUA_TNIL && name_type != LUA_TSTRING) throw ArgError(1, "field 'name' must be a string");
  push_spec(L, "custom");
  for (const char* key : {"forward", "nll", "parameters", "name"}) {
    get_field_raw(L, 1, key);
    lua_setfield(L, -2, key);
  }
  return 1;
}

const Function kHeadFunctions[] = {
    {"softmax", simple_spec<kSoftmax>, "lmkit.heads.softmax() -> HeadSpec\nlog_softmax(l), l = h·Eᵀ + b: the AWD-LSTM baseline."},
    {"sigsoftmax", simple_spec<kSigSoftmax>, "lmkit.heads.sigsoftmax() -> HeadSpec\nSigSoftmax: log_softmax(2l − softplus(l)) (fused op)."},
    {"gss", heads_gss, "lmkit.heads.gss{c=0, k=2} -> HeadSpec\nGeneralized SigSoftmax: log_softmax(k(l−c) + c − (k−1)·softplus(l−c)); GSS(0,2) = SigSoftmax, GSS(c,1) = Softmax."},
    {"plif", heads_plif, "lmkit.heads.plif{K=100000, T=20, sigma=1, freeze=false, lr=0.02, authors_offset=false} -> HeadSpec\nLMS-PLIF: log_softmax(f(l)), f piecewise linear increasing on K equal intervals of [−T, T], slopes softplus(v), v ~ N(log(e−1), σ²) (σ = 1 as the authors' code). The slopes train at their own rate lr (thesis 0.02; lmkit.train's own_lr overrides). freeze=true keeps the slopes at their initial values (LMS-PLIF†). authors_offset=true gives f-logits with f(−T) = 0 as the authors' code (log-probabilities are the same)."},
    {"relu", heads_relu, "lmkit.heads.relu{eps=1e-8} -> HeadSpec\nReLU-based: log((relu(l)+ε) / Σ(relu(l)+ε))."},
    {"sigmoid", simple_spec<kSigmoid>, "lmkit.heads.sigmoid() -> HeadSpec\nSigmoid-based: log_sigmoid(l) − logsumexp(log_sigmoid(l))."},
    {"mos", mixture_spec<kMos, true>, "lmkit.heads.mos{K=15, dropoutl=0.29} -> HeadSpec\nMixture of Softmaxes: logsumexp_k(log π_k + log_softmax(h_k·Eᵀ + b)), h_k = tanh(W_k h), π = softmax(U h)."},
    {"moss", mixture_spec<kMoss, true>, "lmkit.heads.moss{K=15, dropoutl=0.29} -> HeadSpec\nMixture of SigSoftmaxes: MoS with SigSoftmax components."},
    {"moc", mixture_spec<kMoc, true>, "lmkit.heads.moc{K=15, dropoutl=0.29} -> HeadSpec\nMixture of Contexts: log_softmax((Σ_k π_k h_k)·Eᵀ + b)."},
    {"advsoft", heads_advsoft, "lmkit.heads.advsoft{eps=0.01, relative=false, aligned_only=false} -> HeadSpec\nAdversarial Softmax: while training, the target's output embedding e_t is moved by −ε_t·h/‖h‖; evaluation is Softmax. ε_t = eps (thesis eq. 3.23); relative=true makes it eps·‖e_t‖ and aligned_only=true perturbs only where cos(h, e_t) > 0, as the code behind thesis Tables A.1–A.3 (eps 0.005). Embedding noise is the model option emb_noise."},
    {"pointwise", heads_pointwise, "lmkit.heads.pointwise(fn) -> HeadSpec\nlog_softmax(fn(l)) for a Lua function fn of the logits Tensor [M, N] returning a Tensor of the same shape, composed from lmkit tensor ops (autograd works). Models with it cannot be saved."},
    {"custom", heads_custom, "lmkit.heads.custom{forward=fn, nll=fn, parameters={...}, name=} -> HeadSpec\nA head written in Lua: forward(h [M, d], weight [N, d], bias [N] or nil) returns log-probabilities [M, N]; optional nll(h, targets, weight, bias) returns [M] negative log-likelihoods; parameters (Tensors) become the head's parameters. See docs/lua-heads.md."},
};

}  // namespace

LuaCallScope::LuaCallScope(lua_State* L) : previous_(current_thread) { current_thread = L; }
LuaCallScope::~LuaCallScope() { current_thread = previous_; }

Head head_from_spec(lua_State* L, int position, int64_t in_dim, int64_t latent_dim, nlohmann::json& config) {
  position = lua_absindex(L, position);
  if (lua_type(L, position) != LUA_TTABLE || get_field_raw(L, position, "kind") != LUA_TSTRING) {
    if (lua_type(L, position) == LUA_TTABLE) lua_pop(L, 1);
    throw UsageError("option 'head' must be a head from lmkit.heads (e.g. lmkit.heads.mos{K=15})");
  }
  const std::string kind = lua_tostring(L, -1);
  lua_pop(L, 1);
  if (kind == "pointwise") {
    get_field_raw(L, position, "fn");
    auto head = std::make_shared<LuaPointwiseHeadImpl>(L, -1);
    lua_pop(L, 1);
    config = head->config();
    return Head(std::shared_ptr<HeadImpl>(head));
  }
  if (kind == "custom") {
    std::string name = "custom";
    if (get_field_raw(L, position, "name") == LUA_TSTRING) name = lua_tostring(L, -1);
    lua_pop(L, 1);
    auto head = std::make_shared<LuaCustomHeadImpl>(L, position, name);
    config = head->config();
    return Head(std::shared_ptr<HeadImpl>(head));
  }
  config = nlohmann::json::object();
  lua_pushnil(L);
  while (lua_next(L, position) != 0) {
    if (lua_type(L, -2) == LUA_TSTRING) {
      const std::string key = lua_tostring(L, -2);
      if (lua_isinteger(L, -1)) {
        config[key] = lua_tointeger(L, -1);
      } else if (lua_type(L, -1) == LUA_TNUMBER) {
        config[key] = lua_tonumber(L, -1);
      } else if (lua_type(L, -1) == LUA_TBOOLEAN) {
        config[key] = static_cast<bool>(lua_toboolean(L, -1));
      } else if (lua_type(L, -1) == LUA_TSTRING) {
        config[key] = std::string(lua_tostring(L, -1));
      }
    }
    lua_pop(L, 1);
  }
  return make_head(config, in_dim, latent_dim);
}

void open_heads(lua_State* L, int module_index) {
  luaL_newmetatable(L, kHeadSpecMetatable);
  lua_pushliteral(L, "HeadSpec");
  lua_setfield(L, -2, "__name");
  lua_pop(L, 1);
  lua_newtable(L);
  set_functions(L, -1, "lmkit.heads", kHeadFunctions);
  lua_setfield(L, module_index, "heads");
}

}  // namespace lmkit::lua

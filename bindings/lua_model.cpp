#include "bindings/lua_model.h"

#include <new>
#include <string>

#include "bindings/lua_call.h"
#include "bindings/lua_heads.h"
#include "bindings/lua_tensor.h"
#include "runtime/core/device.h"
#include "runtime/core/error.h"
#include "runtime/core/number_text.h"
#include "runtime/models/checkpoint.h"
#include "runtime/models/language_model.h"

namespace lmkit::lua {
namespace {

struct ModelBox {
  LanguageModel model{nullptr};
  torch::Tensor ar, tar;  // from the last :loss call
};

ModelBox& check_box(lua_State* L, int position) {
  auto* box = static_cast<ModelBox*>(luaL_testudata(L, position, kModelMetatable));
  if (!box) type_error(L, position, "Model");
  if (!box->model) throw ArgError(position, "model was already closed or collected");
  return *box;
}

}  // namespace

LanguageModel& check_model(lua_State* L, int position) { return check_box(L, position).model; }

void push_model(lua_State* L, LanguageModel model) {
  void* memory = lua_newuserdatauv(L, sizeof(ModelBox), 0);
  auto* box = new (memory) ModelBox();
  luaL_setmetatable(L, kModelMetatable);
  box->model = std::move(model);
}

namespace {

int model_gc(lua_State* L) {
  auto* box = static_cast<ModelBox*>(luaL_testudata(L, 1, kModelMetatable));
  if (box) box->~ModelBox(), new (box) ModelBox();  // releases the model; the box stays valid
  return 0;
}

int model_tostring(lua_State* L) {
  auto* box = static_cast<ModelBox*>(luaL_testudata(L, 1, kModelMetatable));
  std::string text = "Model (closed)";
  if (box && box->model) {
    const auto counts = box->model->parameter_count();
    text = "Model(" + box->model->head->kind() + ", " + integer_text(counts.at("total")) +
           " parameters): " + to_json(box->model->options).dump();
  }
  lua_pushlstring(L, text.data(), text.size());
  return 1;
}

// The hidden state at `position`: nil (fresh zeros for the batch size) or {{h, c}, ...}.
LstmState check_hidden(lua_State* L, int position, LanguageModel& model, int64_t batch_size) {
  if (lua_isnoneornil(L, position)) return model->init_hidden(batch_size);
  if (lua_type(L, position) != LUA_TTABLE) type_error(L, position, "hidden state table");
  LstmState state;
  const auto n = lua_rawlen(L, position);
  for (lua_Unsigned i = 1; i <= n; ++i) {
    lua_rawgeti(L, position, static_cast<lua_Integer>(i));
    if (lua_type(L, -1) != LUA_TTABLE) {
      lua_pop(L, 1);
      throw ArgError(position, "hidden state entry " + integer_text(i) + " must be a {h, c} pair");
    }
    lua_rawgeti(L, -1, 1);
    lua_rawgeti(L, -2, 2);
    auto* h = test_tensor(L, -2);
    auto* c = test_tensor(L, -1);
    if (!h || !c) {
      lua_pop(L, 3);
      throw ArgError(position, "hidden state entry " + integer_text(i) + " must be a {h, c} pair of Tensors");
    }
    state.emplace_back(*h, *c);
    lua_pop(L, 3);
  }
  return state;
}

// Pushes the state detached: batches carry it without backpropagating into earlier ones.
void push_hidden(lua_State* L, const LstmState& state) {
  lua_createtable(L, static_cast<int>(state.size()), 0);
  for (std::size_t i = 0; i < state.size(); ++i) {
    lua_createtable(L, 2, 0);
    push_tensor(L, state[i].first.detach());
    lua_rawseti(L, -2, 1);
    push_tensor(L, state[i].second.detach());
    lua_rawseti(L, -2, 2);
    lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
  }
}

torch::Tensor check_ids(lua_State* L, int position) {
  auto& ids = check_tensor(L, position);
  if (ids.dim() != 2 || ids.scalar_type() != torch::kInt64) {
    throw ArgError(position, "token ids must be an int64 Tensor [T, B]");
  }
  return ids;
}

int model_forward(lua_State* L) {
  LanguageModel model = check_model(L, 1);  // alive even if a Lua head closes it
  auto ids = check_ids(L, 2);
  auto hidden = check_hidden(L, 3, model, ids.size(1));
  LuaCallScope scope(L);
  auto out = model->encode(ids, hidden);
  push_tensor(L, out.output);
  push_hidden(L, out.hidden);
  return 2;
}

int model_log_probs(lua_State* L) {
  LanguageModel model = check_model(L, 1);  // alive even if a Lua head closes it
  auto ids = check_ids(L, 2);
  auto hidden = check_hidden(L, 3, model, ids.size(1));
  LuaCallScope scope(L);
  auto [logp, next] = model->log_probs(ids, hidden);
  push_tensor(L, logp);
  push_hidden(L, next);
  return 2;
}

int model_loss(lua_State* L) {
  auto& box = check_box(L, 1);
  LanguageModel model = box.model;  // alive even if a Lua head closes it
  auto ids = check_ids(L, 2);
  auto targets = check_tensor(L, 3);
  auto hidden = check_hidden(L, 4, model, ids.size(1));
  LuaCallScope scope(L);
  auto out = model->loss(ids, targets, hidden);
  box.ar = out.ar;
  box.tar = out.tar;
  push_tensor(L, out.loss);
  push_hidden(L, out.hidden);
  return 2;
}

int model_ar(lua_State* L) {
  auto& box = check_box(L, 1);
  if (!box.ar.defined()) throw UsageError("no AR term yet: call model:loss first");
  push_tensor(L, box.ar);
  return 1;
}

int model_tar(lua_State* L) {
  auto& box = check_box(L, 1);
  if (!box.tar.defined()) throw UsageError("no TAR term yet: call model:loss first");
  push_tensor(L, box.tar);
  return 1;
}

int model_top_k(lua_State* L) {
  LanguageModel model = check_model(L, 1);  // alive even if a Lua head closes it
  auto ids = check_ids(L, 2);
  const auto k = check_integer(L, 3);
  if (k < 1 || k > model->options.encoder().vocab_size()) throw ArgError(3, "k must be in [1, vocab_size]");
  auto hidden = check_hidden(L, 4, model, ids.size(1));
  LuaCallScope scope(L);
  torch::NoGradGuard no_grad;
  auto out = model->encode(ids, hidden);
  auto [values, indices] = model->head->top_k(out.output, model->decoder(), k);
  push_tensor(L, values);
  push_tensor(L, indices);
  push_hidden(L, out.hidden);
  return 3;
}

int model_parameter_count(lua_State* L) {
  auto& model = check_model(L, 1);
  const auto counts = model->parameter_count();
  lua_createtable(L, 0, static_cast<int>(counts.size()));
  for (const auto& [part, n] : counts) {
    lua_pushinteger(L, n);
    lua_setfield(L, -2, part.c_str());
  }
  return 1;
}

void push_tensor_list(lua_State* L, const std::vector<torch::Tensor>& tensors) {
  lua_createtable(L, static_cast<int>(tensors.size()), 0);
  lua_Integer i = 0;
  for (const auto& t : tensors) {
    push_tensor(L, t);
    lua_rawseti(L, -2, ++i);
  }
}

int model_parameters(lua_State* L) {
  auto& model = check_model(L, 1);
  std::vector<torch::Tensor> trainable;
  for (const auto& p : model->parameters()) {
    if (p.requires_grad()) trainable.push_back(p);
  }
  push_tensor_list(L, trainable);
  return 1;
}

int model_own_lr_parameters(lua_State* L) {
  auto& model = check_model(L, 1);
  push_tensor_list(L, model->head->own_lr_parameters());
  return 1;
}

template <bool Train>
int model_set_mode(lua_State* L) {
  check_model(L, 1)->train(Train);
  lua_settop(L, 1);
  return 1;
}

int model_is_training(lua_State* L) {
  lua_pushboolean(L, check_model(L, 1)->is_training());
  return 1;
}

int model_init_hidden(lua_State* L) {
  auto& model = check_model(L, 1);
  const auto bsz = check_integer(L, 2);
  if (bsz < 1) throw ArgError(2, "batch size must be positive");
  push_hidden(L, model->init_hidden(bsz));
  return 1;
}

int model_save(lua_State* L) {
  auto& model = check_model(L, 1);
  const auto path = check_string(L, 2);
  const auto kind = model->head->kind();
  if (kind == "pointwise" || kind == "custom") {
    throw UsageError("a model with a head written in Lua (" + kind + ") cannot be saved: its code is not data");
  }
  save_checkpoint(model, path);
  return 0;
}

int model_config(lua_State* L) {
  const auto text = to_json(check_model(L, 1)->options).dump();
  lua_pushlstring(L, text.data(), text.size());
  return 1;
}

int model_to(lua_State* L) {
  auto& model = check_model(L, 1);
  model->to(parse_device(check_string(L, 2)));
  lua_settop(L, 1);
  return 1;
}

int model_double(lua_State* L) {
  check_model(L, 1)->to(torch::kFloat64);
  lua_settop(L, 1);
  return 1;
}

// lmkit.model{...}
int lmkit_model(lua_State* L) {
  const auto specs = language_model_option_specs();
  std::vector<std::string> names{"head"};
  for (const auto& spec : specs) names.push_back(spec.name);
  Options o(L, 1, names);
  if (!o.present()) throw ArgError(1, "options table expected, e.g. lmkit.model{vocab_size = 10000}");
  if (!o.integer("vocab_size")) throw ArgError(1, "option 'vocab_size' is required");
  // Lua's types here, the options' declarations (types, ranges) in language_model_options_from_json.
  nlohmann::json config = nlohmann::json::object();
  for (const auto& spec : specs) {
    const char* key = spec.name.c_str();
    if (spec.type == config::OptionType::Integer) {
      if (auto v = o.integer(key)) config[spec.name] = static_cast<std::int64_t>(*v);
    } else if (spec.type == config::OptionType::Boolean) {
      if (auto v = o.boolean(key)) config[spec.name] = *v;
    } else if (auto v = o.number(key)) {
      config[spec.name] = *v;
    }
  }
  auto options = language_model_options_from_json(config);
  Head head{nullptr};
  lua_pushliteral(L, "head");
  lua_rawget(L, 1);  // raw: a raising __index would longjmp over config and options
  if (!lua_isnil(L, -1)) {
    nlohmann::json head_config;
    head = head_from_spec(L, -1, options.encoder().nhidlast(), options.encoder().emb(), head_config);
    options.head(head_config);
  }
  lua_pop(L, 1);
  push_model(L, LanguageModel(options, head));
  return 1;
}

int lmkit_load(lua_State* L) {
  const auto path = check_string(L, 1);
  auto checkpoint = load_checkpoint(path);
  push_model(L, checkpoint.model);
  const auto version = checkpoint.header.value("lmkit", std::string("?"));
  lua_pushlstring(L, version.data(), version.size());
  return 2;
}

const Function kMetamethods[] = {
    {"__gc", model_gc, nullptr, "Model finalizer"},
    {"__close", model_gc, nullptr, "Model close"},
    {"__tostring", model_tostring, nullptr, "tostring(Model)"},
};

const Function kMethods[] = {
    {"parameter_count", model_parameter_count, "m:parameter_count() -> {total=, embedding=, lstm=, decoder=, head=}\nNumber of parameters by part (frozen ones included); the decoder part is its bias (and its weight when untied)."},
    {"forward", model_forward, "m:forward(ids[, hidden]) -> Tensor, hidden\nEncoder output [T, B, nhidlast] (after the output dropout) for int64 token ids [T, B] (0-based ids). hidden: {{h, c}, ...} per layer, nil for zeros; the returned state is detached."},
    {"log_probs", model_log_probs, "m:log_probs(ids[, hidden]) -> Tensor, hidden\nNext-token log-probabilities [T·B, N] (row t·B + b is position t of sequence b)."},
    {"loss", model_loss, "m:loss(ids, targets[, hidden]) -> Tensor, hidden\nMean NLL of targets (int64 [T, B] or [T·B]) as a scalar Tensor with autograd; the AR/TAR terms of this call are then m:ar() and m:tar()."},
    {"ar", model_ar, "m:ar() -> Tensor\nAR = α·mean(dropped last-layer output²) of the last m:loss call (with autograd)."},
    {"tar", model_tar, "m:tar() -> Tensor\nTAR = β·mean((h_t − h_{t−1})²) on the undropped last-layer output of the last m:loss call."},
    {"top_k", model_top_k, "m:top_k(ids, k[, hidden]) -> Tensor, Tensor, hidden\nThe k most likely next tokens per position: log-probabilities [T·B, k] and token ids [T·B, k] (0-based ids)."},
    {"train", model_set_mode<true>, "m:train() -> m\nTraining mode: dropouts on, AdvSoft's perturbation on."},
    {"eval", model_set_mode<false>, "m:eval() -> m\nEvaluation mode: no dropout."},
    {"is_training", model_is_training, "m:is_training() -> boolean\nTrue in training mode."},
    {"parameters", model_parameters, "m:parameters() -> {Tensor...}\nThe trainable parameters (shared with the model: update them in place, e.g. under lmkit.no_grad)."},
    {"own_lr_parameters", model_own_lr_parameters, "m:own_lr_parameters() -> {Tensor...}\nParameters that train with their own learning rate (LMS-PLIF's slope parameters v; empty for other heads). They are also in m:parameters()."},
    {"init_hidden", model_init_hidden, "m:init_hidden(batch_size) -> hidden\nZero state {{h, c}, ...}, one pair [1, B, size] per layer."},
    {"save", model_save, "m:save(path)\nWrites weights, config and lmkit's version to one checkpoint file (atomically: temporary file + rename, with a checksum)."},
    {"config", model_config, "m:config() -> string\nThe full configuration as JSON (what a checkpoint stores)."},
    {"to", model_to, "m:to(device) -> m\nMoves the parameters to \"cpu\", \"cuda\" or \"cuda:N\"."},
    {"double", model_double, "m:double() -> m\nConverts the parameters to float64 (for gradient checks and exact rank analysis)."},
};

// lmkit.model's doc, from the options' declarations (awd_lstm.cpp, language_model.cpp).
const std::string& model_doc() {
  static const std::string doc = [] {
    const config::OptionSchema options("model", language_model_option_specs());
    const auto signature = options.signature();  // "{vocab_size=10000, ...}"
    return "lmkit.model" + signature.substr(0, signature.size() - 1) + ", head=lmkit.heads.softmax()} -> Model\n"
           "An AWD-LSTM language model with the given output head (see docs/models.md); vocab_size is required.\n"
           "Options:\n" + options.describe();
  }();
  return doc;
}

const Function kFunctions[] = {
    {"model", lmkit_model, model_doc().c_str()},
    {"load", lmkit_load, "lmkit.load(path) -> Model, version\nA model saved with m:save(path), and the lmkit version that wrote it. Truncated, corrupted or foreign files fail with an error naming the file."},
};

const char* kModelDoc =
    "lmkit.Model — an AWD-LSTM language model with an output head (lmkit.model{...}, lmkit.load(path)).\n"
    "Token ids are 0-based values (as Torch's embedding takes them), not Lua indices.";

}  // namespace

std::vector<std::string> model_method_names() {
  std::vector<std::string> names;
  for (const auto& f : kMethods) names.emplace_back(f.name);
  return names;
}

void open_model(lua_State* L, int module_index) {
  luaL_newmetatable(L, kModelMetatable);
  lua_pushliteral(L, "Model");
  lua_setfield(L, -2, "__name");
  set_functions(L, -1, "Model", kMetamethods);
  lua_newtable(L);
  set_functions(L, -1, "Model", kMethods, /*methods=*/true);
  lua_pushvalue(L, -1);
  lua_setfield(L, -3, "methods");
  lua_setfield(L, -2, "__index");
  register_doc(L, -1, "lmkit.Model", kModelDoc);
  lua_setfield(L, module_index, "Model");
  set_functions(L, module_index, "lmkit", kFunctions);
}

}  // namespace lmkit::lua

#include "bindings/lua_train.h"

#include <filesystem>
#include <new>
#include <optional>
#include <stdexcept>

#include "bindings/lua_call.h"
#include "bindings/lua_config.h"
#include "bindings/lua_data.h"
#include "bindings/lua_heads.h"
#include "bindings/lua_model.h"
#include "bindings/lua_tensor.h"
#include "runtime/core/device.h"
#include "runtime/core/error.h"
#include "runtime/core/number_text.h"
#include "runtime/data/corpus_origin.h"
#include "runtime/models/checkpoint.h"
#include "runtime/training/cache_evaluation.h"
#include "runtime/training/evaluate_request.h"
#include "runtime/training/evaluation.h"
#include "runtime/training/resume.h"
#include "runtime/training/run_store.h"
#include "runtime/training/trainer.h"

namespace lmkit::lua {
namespace {

using nlohmann::json;
using training::Trainer;

constexpr char kRunMeta[] = "lmkit.Run";
constexpr char kControlMeta[] = "lmkit.TrainControl";
constexpr const char* kCallbackNames[] = {"on_step", "on_epoch_end", "on_switch", "on_eval"};

// ---- Run: a run directory, and the model that trained in it (when this session trained it) ----

struct RunBox {
  std::string dir;
  LanguageModel model{nullptr};
  bool open = false;
};

RunBox& check_run(lua_State* L, int position) {
  auto* box = static_cast<RunBox*>(luaL_testudata(L, position, kRunMeta));
  if (!box) type_error(L, position, "Run");
  if (!box->open) throw ArgError(position, "run was already closed or collected");
  return *box;
}

void push_run(lua_State* L, std::string dir, LanguageModel model) {
  void* memory = lua_newuserdatauv(L, sizeof(RunBox), 0);
  auto* box = new (memory) RunBox();
  luaL_setmetatable(L, kRunMeta);
  box->dir = std::move(dir);
  box->model = std::move(model);
  box->open = true;
}

int run_gc(lua_State* L) {
  auto* box = static_cast<RunBox*>(luaL_testudata(L, 1, kRunMeta));
  if (box && box->open) box->~RunBox(), new (box) RunBox();
  return 0;
}

int run_tostring(lua_State* L) {
  auto* box = static_cast<RunBox*>(luaL_testudata(L, 1, kRunMeta));
  std::string text = "Run (closed)";
  if (box && box->open) {
    text = "Run " + box->dir;
    training::RunStore store(box->dir);
    if (store.exists("summary.json")) {
      // tostring must not raise (the REPL echoes with it): an unreadable summary is said, not thrown.
      try {
        const auto summary = store.read_json("summary.json");
        const auto status = summary.find("status");
        text += ": " + (status != summary.end() && status->is_string() ? status->get<std::string>() : std::string("?"));
        const auto ppl = summary.find("test_ppl");
        if (ppl != summary.end() && ppl->is_number()) text += ", test ppl " + describe_number(ppl->get<double>());
      } catch (const std::exception&) {
        text += ": summary.json unreadable";
      }
    }
  }
  push_string(L, text);
  return 1;
}

int run_summary(lua_State* L) {
  auto& run = check_run(L, 1);
  training::RunStore store(run.dir);
  if (!store.exists("summary.json")) {
    throw UsageError("run '" + run.dir + "' has no summary.json yet (it has not ended)");
  }
  push_json(L, store.read_json("summary.json"));
  return 1;
}

int run_metrics(lua_State* L) {
  auto& run = check_run(L, 1);
  const auto type = opt_string(L, 2);
  if (type && *type != "step" && *type != "epoch") throw ArgError(2, "record type must be \"step\" or \"epoch\"");
  json records = json::array();
  for (auto& record : training::RunStore(run.dir).metrics()) {
    if (!type || record.value("type", std::string()) == *type) records.push_back(std::move(record));
  }
  push_json(L, records);
  return 1;
}

int run_config(lua_State* L) {
  auto& run = check_run(L, 1);
  push_json(L, training::RunStore(run.dir).read_json("config.json"));
  return 1;
}

int run_dir(lua_State* L) {
  push_string(L, check_run(L, 1).dir);
  return 1;
}

int run_best_model(lua_State* L) {
  auto& run = check_run(L, 1);
  if (run.model) {  // the model that trained holds the best weights once the run has ended
    push_model(L, run.model);
    return 1;
  }
  training::RunStore store(run.dir);
  if (!store.exists("best.ckpt")) throw UsageError("run '" + run.dir + "' has no best.ckpt (no epoch finished)");
  auto model = load_checkpoint(store.path("best.ckpt")).model;
  // The checkpoint must be this run's: a best.ckpt copied from another run would load and
  // evaluate without complaint, under this run's name.
  if (store.exists("config.json")) {
    const auto config = store.read_json("config.json");
    const auto stored = config.find("model");
    if (stored != config.end() && stored->is_object()) {
      auto loaded = to_json(model->options);
      loaded["head"] = model->head->config();
      for (auto it = stored->begin(); it != stored->end(); ++it) {
        const auto other = loaded.find(it.key());
        if (other == loaded.end() || *other != it.value()) {
          throw UsageError("run '" + run.dir + "': best.ckpt holds another model than config.json describes (model." +
                           it.key() + ": " + it.value().dump() + " in config.json, " +
                           (other == loaded.end() ? std::string("absent") : other->dump()) +
                           " in best.ckpt); was it copied from another run?");
        }
      }
    }
  }
  push_model(L, model);
  return 1;
}

const Function kRunMethods[] = {
    {"summary", run_summary, "run:summary() -> table\nsummary.json: status, train/valid/test ppl, parameters, switch_epoch, best_epoch, seconds_per_epoch, peak_rss_bytes, ... (docs/training.md)."},
    {"metrics", run_metrics, "run:metrics([type]) -> {table...}\nThe records of metrics.jsonl in order; type \"step\" (per log interval) or \"epoch\" keeps one kind."},
    {"best_model", run_best_model, "run:best_model() -> Model\nThe model with the best validation loss (the trained model itself after lmkit.train, else loaded from best.ckpt)."},
    {"config", run_config, "run:config() -> table\nconfig.json: the resolved model, corpus and training configuration."},
    {"dir", run_dir, "run:dir() -> string\nThe run directory."},
};

const Function kRunMeta_[] = {
    {"__gc", run_gc, nullptr, "Run finalizer"},
    {"__close", run_gc, nullptr, "Run close"},
    {"__tostring", run_tostring, nullptr, "tostring(Run)"},
    {"__index", index_with_fields<no_fields>, nullptr, "Run indexing"},
};

// ---- TrainControl: what a callback may do to the running trainer ----

struct ControlBox {
  Trainer* trainer = nullptr;  // valid only while lmkit.train runs
};

Trainer& check_control(lua_State* L, int position) {
  auto* box = static_cast<ControlBox*>(luaL_testudata(L, position, kControlMeta));
  if (!box) type_error(L, position, "TrainControl");
  if (!box->trainer) throw ArgError(position, "the training run this control belonged to has ended");
  return *box->trainer;
}

int control_stop(lua_State* L) {
  auto& trainer = check_control(L, 1);
  trainer.request_stop(opt_string(L, 2).value_or("stopped by a callback"));
  return 0;
}

int control_lr(lua_State* L) {
  lua_pushnumber(L, check_control(L, 1).lr());
  return 1;
}

int control_set_lr(lua_State* L) {
  auto& trainer = check_control(L, 1);
  trainer.set_lr(check_number(L, 2));
  return 0;
}

template <bool Freeze>
int control_freeze(lua_State* L) {
  auto& trainer = check_control(L, 1);
  const auto prefix = check_string(L, 2);
  const auto n = trainer.set_frozen(prefix, Freeze);
  if (n == 0) throw ArgError(2, "no parameter name starts with '" + prefix + "' (see model:parameter_names())");
  lua_pushinteger(L, n);
  return 1;
}

const Function kControlMethods[] = {
    {"stop", control_stop, "run:stop([reason])\nEnds the run after the current step (status \"stopped\"; resumable), then evaluates the best model."},
    {"lr", control_lr, "run:lr() -> number\nThe main parameter group's learning rate (before the per-window seq_len/bptt scaling)."},
    {"set_lr", control_set_lr, "run:set_lr(lr)\nSets the main group's learning rate from the next step on."},
    {"freeze", control_freeze<true>, "run:freeze(prefix) -> integer\nFreezes the parameters whose names start with prefix (e.g. \"encoder.lstm0_\"); returns how many. Frozen parameters get no gradient and no update."},
    {"unfreeze", control_freeze<false>, "run:unfreeze(prefix) -> integer\nUndoes freeze(prefix)."},
};

const Function kControlMeta_[] = {
    {"__tostring", [](lua_State* L) {
       push_string(L, "TrainControl");
       return 1;
     }, nullptr, "tostring(TrainControl)"},
    {"__index", index_with_fields<no_fields>, nullptr, "TrainControl indexing"},
};

// ---- callbacks ----

class CallbackError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Calls callbacks[name](info, control) if the table at `callbacks` has a function there.
void call_callback(lua_State* L, int callbacks, int control, const char* name, const json& info) {
  lua_pushstring(L, name);
  lua_rawget(L, callbacks);
  if (lua_type(L, -1) != LUA_TFUNCTION) {
    lua_pop(L, 1);
    return;
  }
  push_json(L, info);
  lua_pushvalue(L, control);
  if (call_with_traceback(L, 2, 0) != LUA_OK) {
    std::string message = describe_value(L, -1);
    lua_pop(L, 1);
    throw CallbackError(std::string(name) + " callback failed: " + message);
  }
}

// Lua's math.random state at a step boundary: two integers drawn from it, reseeded with them
// (math.randomseed(x, y) fixes the whole state), so that resume can restore it exactly.
json capture_lua_random(lua_State* L) {
  lua_getglobal(L, "math");
  if (lua_type(L, -1) != LUA_TTABLE) {
    lua_pop(L, 1);
    return nullptr;
  }
  const int math = lua_gettop(L);
  lua_Integer seeds[2];
  for (auto& seed : seeds) {
    lua_pushliteral(L, "random");
    lua_rawget(L, math);
    lua_pushinteger(L, 0);
    if (lua_type(L, -2) != LUA_TFUNCTION || lua_pcall(L, 1, 1, 0) != LUA_OK) {
      lua_settop(L, math - 1);
      return nullptr;
    }
    seed = lua_tointeger(L, -1);
    lua_pop(L, 1);
  }
  lua_pushliteral(L, "randomseed");
  lua_rawget(L, math);
  lua_pushinteger(L, seeds[0]);
  lua_pushinteger(L, seeds[1]);
  if (lua_type(L, -3) != LUA_TFUNCTION || lua_pcall(L, 2, 0, 0) != LUA_OK) {
    lua_settop(L, math - 1);
    return nullptr;
  }
  lua_settop(L, math - 1);
  return json::array({seeds[0], seeds[1]});
}

void restore_lua_random(lua_State* L, const json& state) {
  if (!state.is_array() || state.size() != 2) return;
  lua_getglobal(L, "math");
  if (lua_type(L, -1) == LUA_TTABLE) {
    lua_pushliteral(L, "randomseed");
    lua_rawget(L, -2);
    lua_pushinteger(L, state[0].get<lua_Integer>());
    lua_pushinteger(L, state[1].get<lua_Integer>());
    if (lua_type(L, -3) != LUA_TFUNCTION || lua_pcall(L, 2, 0, 0) != LUA_OK) lua_pop(L, 1);
  }
  lua_pop(L, 1);
}

training::TrainCallbacks make_callbacks(lua_State* L, int callbacks, int control) {
  training::TrainCallbacks cb;
  cb.on_step = [=](const json& info) { call_callback(L, callbacks, control, "on_step", info); };
  cb.on_epoch_end = [=](const json& info) { call_callback(L, callbacks, control, "on_epoch_end", info); };
  cb.on_switch = [=](const json& info) { call_callback(L, callbacks, control, "on_switch", info); };
  cb.on_eval = [=](const json& info) { call_callback(L, callbacks, control, "on_eval", info); };
  cb.capture_host_state = [=] { return capture_lua_random(L); };
  cb.restore_host_state = [=](const json& state) { restore_lua_random(L, state); };
  return cb;
}

// Runs a prepared trainer with a live control userdata; pushes the Run.
int run_trainer(lua_State* L, Trainer& trainer, int control) {
  auto* box = static_cast<ControlBox*>(lua_touserdata(L, control));
  box->trainer = &trainer;
  struct Reset {
    ControlBox* box;
    ~Reset() { box->trainer = nullptr; }
  } reset{box};
  LuaCallScope scope(L);
  trainer.run();
  push_run(L, trainer.store().dir().string(), trainer.model());
  return 1;
}

// Splits the table at `position` into callbacks (a new table, pushed), the model, the corpus
// and the run_dir; the rest becomes training options (JSON).
struct TrainArguments {
  int callbacks = 0;  // stack index of the table of callback functions
  int model = 0, corpus = 0;
  std::string run_dir;
  std::string device;
  json options = json::object();
};

TrainArguments read_train_table(lua_State* L, int position, bool for_resume) {
  if (lua_type(L, position) != LUA_TTABLE) type_error(L, position, "table");
  TrainArguments args;
  lua_newtable(L);
  const int callbacks = lua_gettop(L);
  args.callbacks = callbacks;
  lua_pushnil(L);
  while (lua_next(L, position) != 0) {
    if (lua_type(L, -2) != LUA_TSTRING) {
      lua_pop(L, 2);
      throw ArgError(position, "option keys must be strings");
    }
    const std::string key = lua_tostring(L, -2);
    bool is_callback = false;
    for (const char* name : kCallbackNames) is_callback = is_callback || key == name;
    if (is_callback) {
      if (lua_type(L, -1) != LUA_TFUNCTION) {
        lua_pop(L, 2);
        throw ArgError(position, "option '" + key + "' must be a function");
      }
      lua_pushvalue(L, -2);
      lua_pushvalue(L, -2);
      lua_rawset(L, callbacks);
    } else if (key == "model") {
      args.model = -1;  // resolved below (absolute index of a copy)
    } else if (key == "corpus") {
      args.corpus = -1;
    } else if (key == "run_dir") {
      if (lua_type(L, -1) != LUA_TSTRING) {
        lua_pop(L, 2);
        throw ArgError(position, "option 'run_dir' must be a string");
      }
      args.run_dir = lua_tostring(L, -1);
    } else if (key == "device" && for_resume) {
      if (lua_type(L, -1) != LUA_TSTRING) {
        lua_pop(L, 2);
        throw ArgError(position, "option 'device' must be a string");
      }
      args.device = lua_tostring(L, -1);
    } else {
      try {
        args.options[key] = to_json(L, lua_gettop(L), key);
      } catch (...) {
        lua_pop(L, 2);
        throw;
      }
    }
    lua_pop(L, 1);
  }
  // Copies of model and corpus at known stack positions (after the callbacks table).
  for (auto [key, slot] : {std::pair<const char*, int*>{"model", &args.model}, {"corpus", &args.corpus}}) {
    if (*slot == 0) continue;
    lua_pushstring(L, key);
    lua_rawget(L, position);
    *slot = lua_gettop(L);
  }
  return args;
}

// model= and corpus= sit in the options table at `table`, copied to their own stack slots: a
// wrong value is reported against the table's argument and the option's name, not the slot.
template <typename Check>
decltype(auto) option_value(int table, const char* key, Check check) {
  try {
    return check();
  } catch (const ArgError& e) {
    throw ArgError(table, "option '" + std::string(key) + "': " + e.what());
  }
}

void push_control(lua_State* L) {
  void* memory = lua_newuserdatauv(L, sizeof(ControlBox), 0);
  new (memory) ControlBox();
  luaL_setmetatable(L, kControlMeta);
}

int lmkit_train(lua_State* L) {
  auto args = read_train_table(L, 1, false);
  const int callbacks = args.callbacks;
  if (!args.model) throw ArgError(1, "option 'model' is required (an lmkit.model{...})");
  if (!args.corpus) throw ArgError(1, "option 'corpus' is required (lmkit.data.corpus(...) or a synthetic language's corpus)");
  if (args.run_dir.empty()) throw ArgError(1, "option 'run_dir' is required (the directory that keeps this run)");
  // A copy: a finalizer run during an allocation may close the Model userdata while training runs.
  LanguageModel model = option_value(1, "model", [&]() -> LanguageModel& { return check_model(L, args.model); });
  const auto corpus = option_value(1, "corpus", [&]() { return check_corpus_value(L, args.corpus); });
  auto options = training::train_options_from_json(args.options);
  push_control(L);
  const int control = lua_gettop(L);
  Trainer trainer(model, corpus, options, args.run_dir, make_callbacks(L, callbacks, control));
  return run_trainer(L, trainer, control);
}

int lmkit_resume(lua_State* L) {
  const auto dir = check_string(L, 1);
  if (lua_isnoneornil(L, 2)) {
    lua_settop(L, 1);
    lua_newtable(L);
  }
  auto args = read_train_table(L, 2, true);
  const int callbacks = args.callbacks;
  if (!args.run_dir.empty()) throw ArgError(2, "run_dir is the first argument of lmkit.resume, not an option");
  training::ResumeRequest request;
  if (args.model) request.model = option_value(2, "model", [&]() -> LanguageModel& { return check_model(L, args.model); });
  if (args.corpus) request.corpus = option_value(2, "corpus", [&]() { return check_corpus_value(L, args.corpus); });
  request.device = args.device;
  request.option_changes = args.options;
  auto run = training::prepare_resume(dir, std::move(request));
  push_control(L);
  const int control = lua_gettop(L);
  Trainer trainer(run.model, run.corpus, run.options, dir, make_callbacks(L, callbacks, control));
  return run_trainer(L, trainer, control);
}

int lmkit_open_run(lua_State* L) {
  const auto dir = check_string(L, 1);
  if (!std::filesystem::is_directory(dir) || !std::filesystem::exists(std::filesystem::path(dir) / "config.json")) {
    throw ArgError(1, "'" + dir + "' is not a run directory (no config.json)");
  }
  push_run(L, dir, LanguageModel{nullptr});
  return 1;
}

void push_eval_result(lua_State* L, const training::EvalResult& r) {
  push_json(L, json{{"loss", r.loss}, {"ppl", r.perplexity}, {"tokens", r.tokens}});
}

// The table at `table` (option `cache` of argument 3): {window=, theta=, lambda=}, read raw; every
// error names cache.<key>.
training::CacheOptions read_cache_options(lua_State* L, int table) {
  training::CacheOptions options;
  lua_pushnil(L);
  while (lua_next(L, table) != 0) {
    const std::string key = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "";
    if (key == "window") {
      int exact = 0;
      const auto value = lua_tointegerx(L, -1, &exact);
      if (!exact || value < 1) {
        lua_pop(L, 2);
        throw ArgError(3, "option 'cache.window' must be an integer ≥ 1 (contexts per column)");
      }
      options.window = value;
    } else if (key == "theta" || key == "lambda") {
      int is_number = 0;
      const double value = lua_tonumberx(L, -1, &is_number);
      if (!is_number) {
        lua_pop(L, 2);
        throw ArgError(3, "option 'cache." + key + "' must be a number");
      }
      (key == "theta" ? options.theta : options.lambda) = value;
    } else {
      lua_pop(L, 2);
      throw ArgError(3, "unknown option 'cache." + (key.empty() ? std::string("(not a string)") : key) +
                            "' (accepted: window, theta, lambda)");
    }
    lua_pop(L, 1);
  }
  return options;
}

int lmkit_evaluate(lua_State* L) {
  LanguageModel model = check_model(L, 1);  // alive even if a Lua head closes it
  auto tokens = check_token_stream(L, 2);
  Options o(L, 3, {"batch_size", "bptt", "cache"});
  training::EvaluateRequest request;
  request.batch_size = o.integer("batch_size");
  request.bptt = o.integer("bptt").value_or(request.bptt);
  if (o.present() && get_field_raw(L, 3, "cache") != LUA_TNIL) {
    if (lua_type(L, -1) != LUA_TTABLE) {
      lua_pop(L, 1);
      throw ArgError(3, "option 'cache' must be a table {window=, theta=, lambda=}");
    }
    request.cache = read_cache_options(L, lua_gettop(L));
    lua_pop(L, 1);
  } else if (o.present()) {
    lua_pop(L, 1);
  }
  LuaCallScope scope(L);
  push_eval_result(L, training::evaluate_stream(model, tokens, request));
  return 1;
}

int lmkit_dynamic_evaluate(lua_State* L) {
  LanguageModel model = check_model(L, 1);  // alive even if a Lua head closes it
  auto train_tokens = check_token_stream(L, 2);
  auto tokens = check_token_stream(L, 3);
  Options o(L, 4, {"lr", "lamb", "epsilon", "bptt", "batch_size", "stats_batch_size", "max_stats_windows"});
  training::DynamicEvalOptions d;
  d.lr = o.number("lr").value_or(d.lr);
  d.lamb = o.number("lamb").value_or(d.lamb);
  d.epsilon = o.number("epsilon").value_or(d.epsilon);
  d.bptt = o.integer("bptt").value_or(d.bptt);
  d.batch_size = o.integer("batch_size").value_or(d.batch_size);
  d.stats_batch_size = o.integer("stats_batch_size").value_or(d.stats_batch_size);
  d.max_stats_windows = o.integer("max_stats_windows").value_or(d.max_stats_windows);
  LuaCallScope scope(L);
  push_eval_result(L, training::dynamic_evaluate(model, train_tokens, tokens, d));
  return 1;
}

// lmkit.train's doc: its training options come from their declaration (train_options.cpp).
const std::string& train_doc() {
  static const std::string doc = [] {
    const auto& schema = training::train_options_schema();
    const auto signature = schema.signature();  // "{lr=30, ...}"
    return "lmkit.train{model=, corpus=, run_dir=, " + signature.substr(1, signature.size() - 2) +
           ", on_step=, on_epoch_end=, on_switch=, on_eval=} -> Run\n"
           "Trains with the AWD-LSTM protocol (docs/training.md). Callbacks get (info, run): info is a table, "
           "run:stop(), run:set_lr(), run:freeze() act on the run. A run_dir holding an unfinished run of the same "
           "configuration is resumed.\nTraining options:\n" +
           schema.describe();
  }();
  return doc;
}

const Function kFunctions[] = {
    {"train", lmkit_train, train_doc().c_str()},
    {"resume", lmkit_resume,
     "lmkit.resume(run_dir[, {model=, corpus=, device=, epochs=, max_seconds=, on_step=, ...}]) -> Run\n"
     "Continues a stopped or preempted run from its state.ckpt, step for step as if it never stopped. The model and corpus "
     "are rebuilt from config.json unless given (a head written in Lua must be given)."},
    {"open_run", lmkit_open_run, "lmkit.open_run(run_dir) -> Run\nA finished (or running) run's directory, to read its summary, metrics and best model."},
    {"evaluate", lmkit_evaluate,
     "lmkit.evaluate(model, tokens[, {batch_size=10, bptt=70, cache=nil}]) -> {loss=, ppl=, tokens=}\n"
     "Perplexity on a token stream (e.g. corpus.test) as AWD-LSTM evaluates: batchified, windows of bptt, state carried, dropout off. "
     "cache = {window=3785, theta=0.662, lambda=0.1279} mixes in a neural cache (Grave et al. 2017; AWD-LSTM's pointer.py): "
     "p = (1−λ)·p_model + λ·Σ_{i in window, y_i = w} softmax(θ·h_t·h_i) over the column's last window contexts, once a window is full; "
     "With a cache, batch_size defaults to pointer.py's 1."},
    {"dynamic_evaluate", lmkit_dynamic_evaluate,
     "lmkit.dynamic_evaluate(model, train_tokens, tokens[, {lr=2e-3, lamb=0.02, epsilon=1e-3, bptt=5, batch_size=1, "
     "stats_batch_size=100, max_stats_windows=-1}]) -> {loss=, ppl=, tokens=}\n"
     "Dynamic evaluation (Krause et al. 2018, RMS variant with decay to the trained weights); the weights are restored afterwards."},
};

}  // namespace

void open_train(lua_State* L, int module_index) {
  module_index = lua_absindex(L, module_index);
  register_class(L, kRunMeta, "Run", kRunMeta_, kRunMethods, "lmkit.Run",
             "lmkit.Run — a training run's directory (config.json, metrics.jsonl, checkpoints, summary.json); see docs/training.md.");
  register_class(L, kControlMeta, "TrainControl", kControlMeta_, kControlMethods, "lmkit.TrainControl",
             "lmkit.TrainControl — the second argument of training callbacks: stop, set_lr, freeze the running training.");
  set_functions(L, module_index, "lmkit", kFunctions);
}

}  // namespace lmkit::lua

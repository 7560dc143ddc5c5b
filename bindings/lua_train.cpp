// lmkit.train / lmkit.resume with callbacks written in Lua; lmkit.open_run, lmkit.evaluate,
// lmkit.dynamic_evaluate and the Run and TrainControl classes, bound by one line each.
#include "bindings/lua_train.h"

#include <stdexcept>

#include "bindings/entry_point.h"
#include "bindings/lua_model.h"
#include "runtime/training/evaluate_request.h"
#include "runtime/training/evaluation.h"
#include "runtime/training/resume.h"
#include "runtime/runs/run_view.h"
#include "runtime/training/trainer.h"

namespace lmkit::lua {
namespace {

using nlohmann::json;
using training::Trainer;

constexpr const char* kCallbackNames[] = {"on_step", "on_epoch_end", "on_switch", "on_eval"};

class CallbackError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Calls callbacks[name](info, control) if the table at `callbacks` has a function there.
void call_callback(lua_State* L, int callbacks, int control, const char* name, const json& info) {
  lua_pushstring(L, name);
  if (lua_rawget(L, callbacks) != LUA_TFUNCTION) {
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

// Lua's math.random state at a step boundary (bindings/lua/random_state.lua), null when it cannot be read.
json capture_lua_random(lua_State* L) {
  if (!push_embedded_function(L, "lmkit.random_state", "capture")) return nullptr;
  if (lua_pcall(L, 0, 1, 0) != LUA_OK) return lua_pop(L, 1), nullptr;
  auto state = to_json(L, -1, "random state");
  lua_pop(L, 1);
  return state;
}

void restore_lua_random(lua_State* L, const json& state) {
  if (!push_embedded_function(L, "lmkit.random_state", "restore")) return;
  push_json(L, state);
  if (lua_pcall(L, 1, 0, 0) != LUA_OK) lua_pop(L, 1);
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

// lmkit.train's and lmkit.resume's table at `position`: its callbacks into a new table (pushed,
// then an empty TrainControl box), model= and corpus= read as the options they are, run_dir= and
// device= apart, the rest training options (JSON, checked by the trainer's schema).
struct TrainArguments {
  int callbacks = 0, control = 0;
  std::optional<LanguageModel> model;
  std::optional<data::Corpus> corpus;
  std::string run_dir, device;
  json options = json::object();
};

TrainArguments read_train_table(lua_State* L, int position, bool for_resume) {
  if (lua_type(L, position) != LUA_TTABLE) type_error(L, position, "table");
  TrainArguments args;
  lua_newtable(L);
  args.callbacks = lua_gettop(L);
  lua_pushnil(L);
  while (lua_next(L, position) != 0) {
    if (lua_type(L, -2) != LUA_TSTRING) throw ArgError(position, "option keys must be strings");
    const std::string key = lua_tostring(L, -2);
    const entry_detail::Where where{position, "option '" + key + "'"};
    bool is_callback = false;
    for (const char* name : kCallbackNames) is_callback = is_callback || key == name;
    if (is_callback) {
      if (lua_type(L, -1) != LUA_TFUNCTION) throw ArgError(position, "option '" + key + "' must be a function");
      lua_pushvalue(L, -2);
      lua_pushvalue(L, -2);
      lua_rawset(L, args.callbacks);
    } else if (key == "model") {
      args.model = entry_detail::read<LanguageModel>(L, -1, where);
    } else if (key == "corpus") {
      args.corpus = *entry_detail::read<std::shared_ptr<const data::Corpus>>(L, -1, where);
    } else if (key == "run_dir" || (key == "device" && for_resume)) {
      (key == "run_dir" ? args.run_dir : args.device) = entry_detail::read<std::string>(L, -1, where);
    } else {
      args.options[key] = to_json(L, lua_gettop(L), key);
    }
    lua_pop(L, 1);
  }
  push_object<Trainer>(L, nullptr);
  args.control = lua_gettop(L);
  return args;
}

// Runs the trainer with the control box sharing it (emptied when the run ends, so that a callback's
// control used later says so); pushes the Run.
int run_trainer(lua_State* L, std::shared_ptr<Trainer> trainer, int control) {
  auto* box = test_box<Trainer>(L, control);
  box->value = trainer;
  struct Reset {
    Box<Trainer>* box;
    ~Reset() { box->value.reset(); }
  } reset{box};
  LuaCallScope scope(L);
  trainer->run();
  push_object<training::RunView>(L, std::make_shared<training::RunView>(trainer->store().dir().string(), trainer->model()));
  return 1;
}

int lmkit_train(lua_State* L) {
  auto args = read_train_table(L, 1, false);
  if (!args.model) throw ArgError(1, "option 'model' is required (an lmkit.model{...})");
  if (!args.corpus) throw ArgError(1, "option 'corpus' is required (lmkit.data.corpus(...) or a synthetic language's corpus)");
  if (args.run_dir.empty()) throw ArgError(1, "option 'run_dir' is required (the directory that keeps this run)");
  auto trainer = std::make_shared<Trainer>(*args.model, *args.corpus, training::train_options_for(*args.model, args.options),
                                           args.run_dir, make_callbacks(L, args.callbacks, args.control));
  return run_trainer(L, std::move(trainer), args.control);
}

int lmkit_resume(lua_State* L) {
  const auto dir = check_string(L, 1);
  if (lua_isnoneornil(L, 2)) {
    lua_settop(L, 1);
    lua_newtable(L);
  }
  auto args = read_train_table(L, 2, true);
  if (!args.run_dir.empty()) throw ArgError(2, "run_dir is the first argument of lmkit.resume, not an option");
  training::ResumeRequest request;
  if (args.model) request.model = *args.model;
  if (args.corpus) request.corpus = *args.corpus;
  request.device = args.device;
  request.option_changes = args.options;
  auto run = training::prepare_resume(dir, std::move(request));
  auto trainer = std::make_shared<Trainer>(run.model, run.corpus, run.options, dir,
                                           make_callbacks(L, args.callbacks, args.control));
  return run_trainer(L, std::move(trainer), args.control);
}

// lmkit.train's doc: its training options come from their declaration (train_options.cpp).
const std::string& train_doc() {
  static const std::string doc = [] {
    const auto& schema = training::train_options_schema();
    const auto signature = schema.signature();  // "{lr=30, ...}"
    return "lmkit.train{model=, corpus=, run_dir=, " + signature.substr(1, signature.size() - 2) +
           ", on_step=, on_epoch_end=, on_switch=, on_eval=} -> Run\n"
           "Trains with the AWD-LSTM protocol and the defaults below; a Transformer gets its own protocol (AdamW, warm-up "
           "and cosine; docs/training.md) for each option not given. Callbacks get (info, run): info is a table, "
           "run:stop(), run:set_lr(), run:freeze() act on the run. A run_dir holding a run of the same configuration "
           "is resumed (a finished one trains on when given more epochs or finetune_epochs); init_from starts a new run "
           "from another run's best model. When it returns, the model holds the best epoch's weights (best.ckpt's, by validation "
           "loss), in evaluation mode.\nTraining options:\n" +
           schema.describe();
  }();
  return doc;
}

}  // namespace

void open_train(lua_State* L, int module_index) {
  using training::RunView;
  static const std::vector<Function> run_methods = {
      method<&RunView::summary>("summary", "", "summary.json: status, train/valid/test ppl, parameters, switch_epoch, best_epoch, seconds_per_epoch, peak_rss_bytes, ... (docs/training.md)."),
      method<&RunView::metrics>("metrics", "type", "The records of metrics.jsonl in order; type \"step\" (per log interval) or \"epoch\" keeps one kind."),
      method<&RunView::best_model>("best_model", "", "The model with the best validation loss (the trained model itself after lmkit.train, else loaded from best.ckpt), in evaluation mode."),
      method<&RunView::config>("config", "", "config.json: the resolved model, corpus and training configuration."),
      method<&RunView::dir>("dir", "", "The run directory."),
  };
  register_class<RunView>(L, run_methods, "lmkit.Run — a training run's directory (config.json, metrics.jsonl, checkpoints, summary.json); see docs/training.md.");
  static const std::vector<Function> control_methods = {
      method<&training::stop_training>("stop", "reason", "Ends the run at the next step boundary (status \"stopped\"; resumable), then evaluates the best model. On a GPU, where on_step comes a step late, one more step has been queued by then (docs/training.md)."),
      method<&Trainer::lr>("lr", "", "The main parameter group's learning rate (before the per-window seq_len/bptt scaling)."),
      method<&Trainer::set_lr>("set_lr", "lr", "Sets the main group's learning rate from the next step on."),
      method<&training::freeze_parameters>("freeze", "prefix", "Freezes the parameters whose names start with prefix (e.g. \"encoder.lstm0_\"); returns how many. Frozen parameters get no gradient and no update."),
      method<&training::unfreeze_parameters>("unfreeze", "prefix", "Undoes freeze(prefix)."),
      method<&Trainer::record>("record", "values", "Appends the recipe's own numbers ({name = number, ...}) to metrics.jsonl at the epoch in progress (on_step) or just finished (on_epoch_end); lmkit compare --metric name plots them."),
  };
  register_class<Trainer>(L, control_methods, "lmkit.TrainControl — the second argument of training callbacks: stop, set_lr, freeze the running training, record its own numbers.");
  static const Function functions[] = {
      {"train", lmkit_train, train_doc().c_str()},
      {"resume", lmkit_resume,
       "lmkit.resume(run_dir[, {model=, corpus=, device=, epochs=, finetune_epochs=, max_seconds=, on_step=, ...}]) -> Run\n"
       "Continues a stopped or preempted run from its state.ckpt, step for step as if it never stopped; a finished run "
       "given more epochs or finetune_epochs trains on. The model and corpus "
       "are rebuilt from config.json unless given (a head written in Lua must be given)."},
      entry<&training::open_run>("lmkit", "open_run", "run_dir", "A finished (or running) run's directory, to read its summary, metrics and best model."),
      entry<&training::evaluate_stream>("lmkit", "evaluate", "model, tokens",
          "Perplexity on a token stream (e.g. corpus.test) as AWD-LSTM evaluates: batchified, windows of bptt, state carried, dropout off; "
          "with a cache, as pointer.py."),
      entry<&training::dynamic_evaluate>("lmkit", "dynamic_evaluate", "model, train_tokens, tokens",
          "Dynamic evaluation (Krause et al. 2018, RMS variant with decay to the trained weights); the weights are restored afterwards."),
  };
  set_functions(L, lua_absindex(L, module_index), "lmkit", functions);
}

}  // namespace lmkit::lua

#include "bindings/lua_process.h"

#include <chrono>
#include <string>
#include <thread>

#include "bindings/lua_call.h"
#include "bindings/process_pool.h"
#include "runtime/core/number_text.h"
#include "runtime/training/preemption.h"

namespace lmkit::lua {
namespace {

// The string→string table at `position` (an environment), each entry checked.
lua::Environment check_environment(lua_State* L, int position, const std::string& what) {
  lua::Environment environment;
  if (lua_type(L, position) == LUA_TNIL) return environment;
  if (lua_type(L, position) != LUA_TTABLE) throw ArgError(1, what + " must be a table of strings");
  position = lua_absindex(L, position);
  lua_pushnil(L);
  while (lua_next(L, position) != 0) {
    if (lua_type(L, -2) != LUA_TSTRING || lua_type(L, -1) != LUA_TSTRING) {
      lua_pop(L, 2);
      throw ArgError(1, what + ": every key and value must be a string");
    }
    environment.emplace_back(lua_tostring(L, -2), lua_tostring(L, -1));
    lua_pop(L, 1);
  }
  return environment;
}

std::vector<std::string> check_string_list(lua_State* L, int position, const std::string& what) {
  if (lua_type(L, position) != LUA_TTABLE) throw ArgError(1, what + " must be a list of strings");
  std::vector<std::string> strings;
  const auto n = lua_rawlen(L, position);
  for (lua_Unsigned i = 1; i <= n; ++i) {
    if (lua_rawgeti(L, position, static_cast<lua_Integer>(i)) != LUA_TSTRING) {
      lua_pop(L, 1);
      throw ArgError(1, what + ": entry " + integer_text(i) + " is not a string");
    }
    strings.emplace_back(lua_tostring(L, -1));
    lua_pop(L, 1);
  }
  return strings;
}

void push_event(lua_State* L, const lua::ProcessEvent& e) {
  lua_createtable(L, 0, 7);
  lua_pushstring(L, e.kind == lua::ProcessEvent::Kind::started ? "started" : "exited");
  lua_setfield(L, -2, "kind");
  lua_pushinteger(L, static_cast<lua_Integer>(e.index) + 1);
  lua_setfield(L, -2, "task");
  lua_pushinteger(L, static_cast<lua_Integer>(e.slot) + 1);
  lua_setfield(L, -2, "slot");
  lua_pushinteger(L, e.pid);
  lua_setfield(L, -2, "pid");
  if (e.kind == lua::ProcessEvent::Kind::exited) {
    if (e.signal == 0) {
      lua_pushinteger(L, e.exit_code);
      lua_setfield(L, -2, "exit_code");
    } else {
      lua_pushinteger(L, e.signal);
      lua_setfield(L, -2, "signal");
    }
    lua_pushnumber(L, e.seconds);
    lua_setfield(L, -2, "seconds");
  }
}

int process_run_pool(lua_State* L) {
  check_type(L, 1, LUA_TTABLE, "table");
  Options options(L, 1, {"tasks", "jobs", "slots", "on_event", "poll_seconds"});
  std::vector<lua::ProcessSpec> specs;
  lua_pushliteral(L, "tasks");
  if (lua_rawget(L, 1) != LUA_TTABLE) throw ArgError(1, "option 'tasks' must be a list of {argv=, log=, env=}");
  const int tasks = lua_gettop(L);
  const auto n = lua_rawlen(L, tasks);
  for (lua_Unsigned i = 1; i <= n; ++i) {
    const std::string what = "tasks[" + integer_text(i) + "]";
    if (lua_rawgeti(L, tasks, static_cast<lua_Integer>(i)) != LUA_TTABLE) throw ArgError(1, what + " is not a table");
    const int task = lua_gettop(L);
    lua::ProcessSpec spec;
    lua_pushliteral(L, "argv");
    lua_rawget(L, task);
    spec.argv = check_string_list(L, -1, what + ".argv");
    lua_pop(L, 1);
    lua_pushliteral(L, "log");
    if (lua_rawget(L, task) != LUA_TSTRING) throw ArgError(1, what + ".log must be a file path");
    spec.log_path = lua_tostring(L, -1);
    lua_pop(L, 1);
    lua_pushliteral(L, "env");
    lua_rawget(L, task);
    spec.environment = check_environment(L, -1, what + ".env");
    lua_pop(L, 2);
    specs.push_back(std::move(spec));
  }
  lua_pop(L, 1);

  lua::PoolOptions pool;
  if (auto jobs = options.integer("jobs")) {
    if (*jobs < 1) throw ArgError(1, "option 'jobs' must be at least 1, got " + integer_text(*jobs));
    pool.jobs = static_cast<std::size_t>(*jobs);
  }
  if (auto poll = options.number("poll_seconds")) pool.poll_seconds = *poll;
  lua_pushliteral(L, "slots");
  if (lua_rawget(L, 1) == LUA_TTABLE) {
    const int slots = lua_gettop(L);
    const auto count = lua_rawlen(L, slots);
    for (lua_Unsigned i = 1; i <= count; ++i) {
      lua_rawgeti(L, slots, static_cast<lua_Integer>(i));
      pool.slot_environment.push_back(check_environment(L, -1, "slots[" + integer_text(i) + "]"));
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  lua_pushliteral(L, "on_event");
  const bool has_callback = lua_rawget(L, 1) == LUA_TFUNCTION;
  const int callback = lua_gettop(L);

  const auto result = lua::run_process_pool(specs, pool, [&](const lua::ProcessEvent& event) {
    if (!has_callback) return;
    lua_pushvalue(L, callback);
    push_event(L, event);
    if (lua_pcall(L, 1, 0, 0) != LUA_OK) throw PendingLuaError();
  });

  lua_createtable(L, 0, 3);
  lua_createtable(L, static_cast<int>(result.exits.size()), 0);
  for (std::size_t i = 0; i < result.exits.size(); ++i) {
    push_event(L, result.exits[i]);
    lua_rawseti(L, -2, static_cast<lua_Integer>(i) + 1);
  }
  lua_setfield(L, -2, "exits");
  lua_pushinteger(L, result.forwarded_signal);
  lua_setfield(L, -2, "signal");
  lua_pushinteger(L, static_cast<lua_Integer>(result.not_started));
  lua_setfield(L, -2, "not_started");
  return 1;
}

int process_alive(lua_State* L) {
  lua_pushboolean(L, lua::process_alive(static_cast<int>(check_integer(L, 1))));
  return 1;
}

int process_pid(lua_State* L) {
  lua_pushinteger(L, lua::current_pid());
  return 1;
}

int process_hostname(lua_State* L) {
  push_string(L, lua::host_name());
  return 1;
}

int process_executable(lua_State* L) {
  push_string(L, lua::executable_path());
  return 1;
}

int process_absolute(lua_State* L) {
  push_string(L, lua::absolute_path(check_string(L, 1)));
  return 1;
}

int process_sleep(lua_State* L) {
  const double seconds = check_number(L, 1);
  if (!(seconds >= 0)) throw ArgError(1, "seconds must be >= 0");
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  return 0;
}

int process_preempted(lua_State* L) {
  lua_pushboolean(L, training::was_preempted());
  return 1;
}

const Function kFunctions[] = {
    {"run_pool", process_run_pool,
     "lmkit.process.run_pool{tasks={{argv={...}, log=, env={K=V}}, ...}, jobs=1, slots={{K=V}, ...}, on_event=fn} -> {exits=, signal=, not_started=}\n"
     "Runs each task's command (argv[1] is a path) with at most `jobs` at a time (or one per entry of `slots`, whose "
     "variables its children get, e.g. CUDA_VISIBLE_DEVICES), output appended to `log`, and waits for all. on_event({kind=\"started\"|\"exited\", "
     "task=, slot=, pid=, exit_code= or signal=, seconds=}) sees each start and end. SIGTERM/SIGUSR1 to this process are forwarded to "
     "the running tasks and no further task starts; `signal` reports it."},
    {"alive", process_alive, "lmkit.process.alive(pid) -> boolean\nWhether a process with this id exists on this machine."},
    {"pid", process_pid, "lmkit.process.pid() -> integer\nThis process's id."},
    {"hostname", process_hostname, "lmkit.process.hostname() -> string\nThis machine's host name."},
    {"executable", process_executable, "lmkit.process.executable() -> string\nThe path of the running lmkit program."},
    {"absolute", process_absolute, "lmkit.process.absolute(path) -> string\n`path` made absolute against the working directory."},
    {"sleep", process_sleep, "lmkit.process.sleep(seconds)\nWaits."},
    {"preempted", process_preempted,
     "lmkit.process.preempted() -> boolean\nWhether a training run in this process stopped because of SIGTERM/SIGUSR1 (its state is saved; `lmkit run` exits with 75)."},
};

}  // namespace

void open_process(lua_State* L, int module_index) {
  module_index = lua_absindex(L, module_index);
  lua_newtable(L);
  set_functions(L, -1, "lmkit.process", kFunctions);
  // The exit status of a task that saved its state on a preemption signal (one definition: preemption.h).
  lua_pushinteger(L, training::kPreemptedExitStatus);
  lua_setfield(L, -2, "PREEMPTED_EXIT");
  register_doc(L, -1, "lmkit.process", "lmkit.process — child processes for batch runs, and facts about this process.");
  lua_setfield(L, module_index, "process");
}

}  // namespace lmkit::lua

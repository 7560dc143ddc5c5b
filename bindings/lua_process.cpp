// lmkit.process: child processes for batch runs (the pool calls back into Lua on each event), and
// facts about this process — runtime entry points bound by one line each.
#include "bindings/lua_process.h"

#include "bindings/entry_point.h"
#include "runtime/core/interruption.h"
#include "runtime/batch/batch_commands.h"
#include "runtime/core/preemption.h"
#include "runtime/batch/batch_plan.h"
#include "runtime/batch/batch_task_state.h"
#include "runtime/batch/process_pool.h"

namespace lmkit::lua {
namespace {

// lmkit.process.run_pool{tasks=, jobs=, slots=, poll_seconds=, on_event=fn}
int run_pool(lua_State* L) {
  if (lua_type(L, 1) != LUA_TTABLE) type_error(L, 1, "table");
  if (get_field_raw(L, 1, "tasks") != LUA_TTABLE) throw ArgError(1, "option 'tasks' must be a list of {argv=, log=, env=}");
  lua_pop(L, 1);
  const bool has_callback = get_field_raw(L, 1, "on_event") == LUA_TFUNCTION;
  const int callback = lua_gettop(L);
  const auto request = entry_detail::read_declared<training::PoolRequest>(L, 1, entry_detail::Where{1, ""}, {"on_event"});
  const auto summary = training::run_pool(request, [&](const training::PoolEvent& event) {
    if (!has_callback) return;
    lua_pushvalue(L, callback);
    entry_detail::push_one(L, event);
    if (lua_pcall(L, 1, 0, 0) != LUA_OK) throw PendingLuaError();
  });
  entry_detail::push_one(L, summary);
  return 1;
}

// lmkit.process.run_task(out, task, cell, recipe, fn): fn() run as batch task `task`, recorded
// (runtime/batch/batch_task_state.h); fn's error goes on as it is, after the record says failed.
int run_task(lua_State* L) {
  using entry_detail::read;
  using entry_detail::Where;
  const auto out = read<std::string>(L, 1, Where{1, ""});
  const auto task = read<std::int64_t>(L, 2, Where{2, ""});
  const auto cell = read<std::string>(L, 3, Where{3, ""});
  const auto recipe = read<std::string>(L, 4, Where{4, ""});
  if (lua_type(L, 5) != LUA_TFUNCTION) type_error(L, 5, "function");
  bool raised = false;
  training::run_recorded_task(out, task, cell, recipe, [&]() -> std::optional<std::string> {
    lua_pushvalue(L, 5);
    if (lua_pcall(L, 0, 0, 0) == LUA_OK) return std::nullopt;
    raised = true;  // the error value stays on the stack, raised again below
    return describe_value(L, -1);  // protected: a __tostring that raises cannot jump past the lock
  });
  if (raised) throw PendingLuaError();
  return 0;
}

}  // namespace

void open_process(lua_State* L, int module_index) {
  static const Function functions[] = {
      {"run_pool", run_pool,
       "lmkit.process.run_pool{tasks={{argv={...}, log=, env={K=V}}, ...}, jobs=1, slots={{K=V}, ...}, poll_seconds=0.1, on_event=fn} -> {exits=, signal=, not_started=}\n"
       "Runs each task's command (argv[1] is a path) with at most `jobs` at a time (or one per entry of `slots`, whose "
       "variables its children get, e.g. CUDA_VISIBLE_DEVICES), output appended to `log`, and waits for all. on_event({kind=\"started\"|\"exited\", "
       "task=, slot=, pid=, exit_code= or signal=, seconds=}) sees each start and end. SIGTERM/SIGUSR1 to this process are forwarded to "
       "the running tasks and no further task starts; `signal` reports it."},
      entry<&training::run_batch>("lmkit.process", "run_batch", "",
          "Runs (backend \"local\") or submits (\"slurm\") the grid's tasks that are neither done nor running nor queued, "
          "as `lmkit batch` does (lmkit.batch.submit computes the grid); the exit status: 0, 1 a task failed, 75 stopped by a signal."),
      entry<&training::check_batch_options>("lmkit.process", "check_batch_options", "",
          "Refuses options of `lmkit batch` that do not go together (a backend's option on the other, --jobs with --tasks-per-gpu)."),
      entry<&training::batch_status>("lmkit.process", "batch_status", "dir",
          "Prints the per-task table of a batch folder; 0 all done, 1 a task failed or was lost, 3 some still to finish."),
      entry<&training::batch_report>("lmkit.process", "batch_report", "dir",
          "Runs the batch's recipe on its folder with report_only=true in a child lmkit; its exit status."),
      {"run_task", run_task,
       "lmkit.process.run_task(out, task, cell, recipe, fn)\n"
       "Runs fn() as batch task `task` (cell `cell`): its folder locked, batch/tasks/<task>.json saying running, then "
       "done, failed (fn's error, which goes on) or preempted."},
      entry<&training::recipe_plan>("lmkit.process", "plan", "request",
          "A recipe's plan from {out=, cells=, declared=, needs={{id=, need= | failed=}, ...}}: {lines=, problems=} (runtime/batch/batch_plan.h)."),
      entry<&lmkit::process_alive>("lmkit.process", "alive", "pid", "Whether a process with this id exists on this machine."),
      entry<&lmkit::current_pid>("lmkit.process", "pid", "", "This process's id."),
      entry<&lmkit::host_name>("lmkit.process", "hostname", "", "This machine's host name."),
      entry<&lmkit::executable_path>("lmkit.process", "executable", "", "The path of the running lmkit program."),
      entry<&lmkit::absolute_path>("lmkit.process", "absolute", "path", "`path` made absolute against the working directory."),
      entry<&lmkit::sleep_seconds>("lmkit.process", "sleep", "seconds", "Waits."),
      entry<&lmkit::was_preempted>("lmkit.process", "preempted", "",
          "Whether a training run in this process stopped because of SIGTERM/SIGUSR1 (its state is saved; `lmkit run` exits with 75)."),
      entry<&was_interrupted>("lmkit.process", "interrupted", "",
          "Whether Ctrl-C stopped work in this process (a training run saved its state first; `lmkit run` exits with 130)."),
  };
  module_index = lua_absindex(L, module_index);
  lua_newtable(L);
  set_functions(L, -1, "lmkit.process", functions);
  // The exit status of a task that saved its state on a preemption signal (one definition: preemption.h).
  lua_pushinteger(L, lmkit::kPreemptedExitStatus);
  lua_setfield(L, -2, "PREEMPTED_EXIT");
  register_doc(L, -1, "lmkit.process", "lmkit.process — child processes for batch runs, and facts about this process.");
  lua_setfield(L, module_index, "process");
}

}  // namespace lmkit::lua

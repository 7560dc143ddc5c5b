-- lmkit.batch: a recipe's grid as a batch of tasks, on this machine or on a Slurm cluster.
--
--   lmkit batch recipes/gss_grid.lua --backend local --jobs 2 --set scale=tiny
--   lmkit batch recipes/gss_grid.lua --backend slurm --partition gpu --gpus-per-task 1 --time 04:00:00 --requeue
--   lmkit status runs/gss_grid-tiny
--   lmkit report runs/gss_grid-tiny
--
-- Task i is cell i of the grid: `lmkit run RECIPE --set out=OUT --set task=i` plus the batch's own
-- --set options. Everything lives in the recipe's output folder OUT, which the tasks share:
--   OUT/cells/<id>/result.json   a finished task (the truth: a task with it is never run again)
--   OUT/batch/manifest.json      the recipe, its settings, the tasks and every Slurm submission
--   OUT/batch/tasks/<i>.json     what the task last said of itself (running/done/failed/preempted)
--   OUT/batch/logs/task-<i>.log  its output, appended across attempts
--   OUT/batch/slurm/array.sbatch the job script of the last Slurm submission
-- Submitting again runs only the tasks that are neither done nor running nor queued.
local lmkit = require "lmkit"
local recipe = require "lmkit.recipe"
local batch = {}

-- A mistake of the user's (a folder, a setting, a missing sbatch): its message alone, exit status 2,
-- no traceback. Anything else is a bug and keeps its traceback.
local UserMistake = {}
local function fail(message)
  error(setmetatable({message = message}, UserMistake), 0)
end

local PREEMPTED_EXIT = lmkit.process.PREEMPTED_EXIT  -- 75, EX_TEMPFAIL: the task saved its state and can resume

local function quote(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

local read_json = recipe.read_json  -- nil for a missing file, nil and a message for invalid JSON

local function write_json(path, value)
  lmkit.write_file(path, lmkit.json_encode(value, true))
end

local function mkdir(path)
  local ok, err = pcall(lmkit.fs.mkdir, path)
  if not ok then fail(("lmkit batch: %s"):format(err)) end
end

local function command_output(command)
  local pipe = io.popen(command .. " 2>&1")
  if not pipe then return nil end
  local text = pipe:read("a")
  local ok, _, code = pipe:close()
  return text, ok and 0 or code
end

local function have_command(name)
  local _, code = command_output("command -v " .. quote(name))
  return code == 0
end

local function paths(out)
  local b = out .. "/batch"
  return {batch = b, manifest = b .. "/manifest.json", tasks = b .. "/tasks", logs = b .. "/logs",
          slurm = b .. "/slurm"}
end

batch.paths = paths

function batch.log_file(out, index)
  return ("%s/task-%d.log"):format(paths(out).logs, index)
end

-- "1-3,5,7-9" for {1,2,3,5,7,8,9}: Slurm's --array syntax.
function batch.index_ranges(indices)
  local sorted = {}
  for i, v in ipairs(indices) do sorted[i] = v end
  table.sort(sorted)
  local parts, i = {}, 1
  while i <= #sorted do
    local j = i
    while j < #sorted and sorted[j + 1] == sorted[j] + 1 do j = j + 1 end
    parts[#parts + 1] = i == j and tostring(sorted[i]) or ("%d-%d"):format(sorted[i], sorted[j])
    i = j + 1
  end
  return table.concat(parts, ",")
end

------------------------------------------------------------------------------ manifest

local function same_list(a, b)
  if #a ~= #b then return false end
  for i = 1, #a do if a[i] ~= b[i] then return false end end
  return true
end

-- A cell id as a folder under cells/: a relative path that stays inside (no "..", not absolute).
local function safe_cell_id(id)
  if type(id) ~= "string" or id == "" or id:sub(1, 1) == "/" or id:find("%z") then return false end
  for part in id:gmatch("[^/]+") do
    if part == ".." or part == "." then return false end
  end
  return true
end

-- The manifest's fields a person may have edited, checked so that status, report and batch name the
-- file and the key instead of failing inside this file. Returns nil or the problem in words.
local function manifest_problem(manifest)
  if type(manifest) ~= "table" then return "it is not a JSON object" end
  if type(manifest.recipe) ~= "string" or manifest.recipe == "" then return "'recipe' is not a script's path" end
  if type(manifest.sets) ~= "table" then return "'sets' is not a list" end
  for i, s in ipairs(manifest.sets) do
    if type(s) ~= "string" or not s:find("=", 1, true) then return ("'sets'[%d] is not a KEY=VALUE string"):format(i) end
  end
  if type(manifest.tasks) ~= "table" or #manifest.tasks == 0 then return "'tasks' is not a non-empty list" end
  for i, t in ipairs(manifest.tasks) do
    if type(t) ~= "table" or not safe_cell_id(t.id) then
      return ("'tasks'[%d] has no cell id that names a folder under cells/"):format(i)
    end
  end
  if manifest.name ~= nil and type(manifest.name) ~= "string" then return "'name' is not a string" end
  if manifest.slurm_jobs ~= nil then
    if type(manifest.slurm_jobs) ~= "table" then return "'slurm_jobs' is not a list" end
    for i, job in ipairs(manifest.slurm_jobs) do
      if type(job) ~= "table" or job.job == nil or (job.tasks ~= nil and type(job.tasks) ~= "table") then
        return ("'slurm_jobs'[%d] is not a submission ({job=, tasks=})"):format(i)
      end
    end
  end
  return nil
end

-- The folder's manifest. A batch folder is its own wherever it lies: every path is taken from the
-- folder it was read from (a copied or moved folder's status, report and batch are the copy's), never
-- from what an older lmkit wrote into it.
function batch.read_manifest(dir)
  local file = paths(dir).manifest
  local manifest, problem = read_json(file)
  if not manifest then
    fail(problem and ("lmkit: %s: the batch manifest is damaged (%s); `lmkit batch` with the same recipe and settings rewrites it")
                        :format(file, problem)
                  or ("lmkit: %s is not a batch folder (no %s); `lmkit batch RECIPE --set out=%s` makes one")
                        :format(dir, file, dir))
  end
  problem = manifest_problem(manifest)
  if problem then
    fail(("lmkit: %s: %s; `lmkit batch` with the same recipe and settings in a new folder (--set out=DIR) starts afresh")
           :format(file, problem))
  end
  manifest.out = dir
  manifest.name = manifest.name or manifest.recipe:match("([^/]+)%.lua$") or manifest.recipe
  manifest.slurm_jobs = manifest.slurm_jobs or {}
  return manifest
end

-- The manifest as written: everything but the folder's own path, which is wherever it is read from.
local function write_manifest(manifest)
  local copy = {}
  for k, v in pairs(manifest) do
    if k ~= "out" then copy[k] = v end
  end
  write_json(paths(manifest.out).manifest, copy)
end

-- The manifest for this recipe, settings and grid: a new one, or the folder's, which must agree.
local function reconcile_manifest(spec, out, sets, cells, backend)
  local tasks, ids = {}, {}
  for i, cell in ipairs(cells) do
    tasks[i] = {task = i, id = cell.id}
    ids[i] = cell.id
  end
  local file = paths(out).manifest
  local existing, damaged = read_json(file)
  if damaged then
    fail(("lmkit batch: %s: the batch manifest is damaged (%s); move the folder aside or use another one (--set out=DIR)")
           :format(file, damaged))
  end
  if existing then
    local problem = manifest_problem(existing)
    if problem then
      fail(("lmkit batch: %s: %s; move the folder aside or use another one (--set out=DIR)"):format(file, problem))
    end
    local old_ids = {}
    for i, t in ipairs(existing.tasks) do old_ids[i] = t.id end
    local old_sets = existing.sets
    if existing.recipe ~= spec.path or not same_list(old_ids, ids) or not same_list(old_sets, sets) then
      fail(("lmkit batch: %s already holds a batch of %s with %s (%d tasks); this one is %s with %s (%d tasks). "
             .. "Use another folder (--set out=DIR) or the same recipe and settings."):format(
             out, tostring(existing.recipe), #old_sets > 0 and table.concat(old_sets, " ") or "no --set",
             #old_ids, spec.path, #sets > 0 and table.concat(sets, " ") or "no --set", #ids))
    end
    existing.backend = backend
    existing.lmkit = lmkit.process.executable()  -- the job script runs the lmkit that submitted it
    existing.slurm_jobs = existing.slurm_jobs or {}
    existing.out = out  -- this folder, wherever the manifest was first written
    return existing
  end
  return {format = 1, recipe = spec.path, name = spec.name, description = spec.description, out = out,
          sets = sets, tasks = tasks, created = os.date("!%Y-%m-%dT%H:%M:%SZ"), backend = backend,
          lmkit = lmkit.process.executable(), slurm_jobs = {}}
end

------------------------------------------------------------------------------ task states

-- Slurm's view of our array tasks: {["<job>_<i>"] = "RUNNING"|"PENDING"|...}, or nil (no squeue).
local function slurm_queue(manifest)
  if #manifest.slurm_jobs == 0 or not have_command("squeue") then return nil end
  local ours = {}
  for _, job in ipairs(manifest.slurm_jobs) do ours[tostring(job.job)] = true end
  local text, code = command_output("squeue -h -r --me -o '%i %T'")
  if code ~= 0 then return nil end
  local states = {}
  for id, state in text:gmatch("(%S+) (%S+)") do
    local job = id:match("^(%d+)_")
    if job and ours[job] then states[id] = state end
  end
  return states
end

-- The Slurm id of task i under the newest submission that included it.
local function slurm_id_of(manifest, index)
  for k = #manifest.slurm_jobs, 1, -1 do
    local job = manifest.slurm_jobs[k]
    for _, t in ipairs(job.tasks or {}) do
      if t == index then return ("%s_%d"):format(job.job, index) end
    end
  end
  return nil
end

local QUEUED = {PENDING = true, REQUEUED = true, REQUEUE_HOLD = true, REQUEUE_FED = true, CONFIGURING = true,
                RESV_DEL_HOLD = true, SUSPENDED = true}

-- Each task's state: done, running, queued, requeued (preempted, waiting to resume), preempted
-- (saved its state, not queued: the next `lmkit batch` resumes it), failed, lost (its process ended
-- without a word: killed, out of memory, time limit without a signal), pending (never started).
function batch.task_states(manifest)
  local out = manifest.out
  local queue = slurm_queue(manifest)
  local host = lmkit.process.hostname()
  local states = {}
  for i, t in ipairs(manifest.tasks) do
    local s = {task = i, id = t.id, log = batch.log_file(out, i)}
    local record = read_json(recipe.task_state_file(out, i))
    s.record = record
    s.attempts = record and record.attempt or 0
    local slurm_id = slurm_id_of(manifest, i)
    local in_queue = queue and slurm_id and queue[slurm_id]
    s.slurm_id = slurm_id
    local result_file = out .. "/cells/" .. t.id .. "/result.json"
    local result, damaged = read_json(result_file)
    if result then
      s.state = "done"
    elseif damaged and not in_queue then
      -- Edited or cut short by hand: named, and run again by the next `lmkit batch`.
      s.state = "failed"
      s.problem = ("%s is damaged (%s); `lmkit batch` runs the task again"):format(result_file, damaged)
    elseif in_queue then
      if QUEUED[in_queue] then
        s.state = record and record.state == "preempted" and "requeued" or "queued"
      else
        s.state = "running"
      end
    elseif record then
      if record.state == "running" then
        if record.slurm_job then
          -- Not in the queue (or no squeue here): gone without recording an end, unless squeue is missing.
          s.state = queue and "lost" or "running"
        elseif record.host == host and not lmkit.process.alive(record.pid) then
          s.state = "lost"
        else
          s.state = "running"
        end
      elseif record.state == "done" then
        s.state = "lost"  -- said done but left no result.json (deleted since?)
      else
        s.state = record.state
      end
    else
      s.state = "pending"
    end
    states[i] = s
  end
  return states, queue ~= nil
end

local ORDER = {"done", "running", "queued", "requeued", "preempted", "failed", "lost", "pending"}

local function count(states)
  local counts = {}
  for _, name in ipairs(ORDER) do counts[name] = 0 end
  for _, s in ipairs(states) do counts[s.state] = counts[s.state] + 1 end
  return counts
end

local function summary_line(states)
  local counts, parts = count(states), {}
  for _, name in ipairs(ORDER) do
    if counts[name] > 0 or name == "done" then parts[#parts + 1] = ("%d %s"):format(counts[name], name) end
  end
  return table.concat(parts, ", "), counts
end

local function first_line(text)
  return (tostring(text or ""):match("^[^\n]*"))
end

local function detail(s)
  local r = s.record
  if s.state == "done" then
    if r and r.started and r.finished then return ("%d s"):format(r.finished - r.started) end
    return ""
  elseif s.state == "failed" then
    if s.problem then return s.problem end
    return first_line(r and r.error) .. " (log: " .. s.log .. ")"
  elseif s.state == "lost" then
    return "ended without recording why (killed? out of memory? time limit?): see " .. s.log
  elseif s.state == "running" then
    local where = r and (r.host or "?") or ""
    if s.slurm_id then return ("slurm %s%s"):format(s.slurm_id, where ~= "" and (" on " .. where) or "") end
    return r and ("pid %s on %s"):format(tostring(r.pid), where) or ""
  elseif s.state == "queued" or s.state == "requeued" then
    return s.slurm_id and ("slurm " .. s.slurm_id) or ""
  elseif s.state == "preempted" then
    return "state saved; `lmkit batch` again resumes it"
  end
  return ""
end

-- Prints the per-task table; returns the counts.
function batch.print_status(manifest, states, with_queue)
  local line, counts = summary_line(states)
  print(("%s in %s: %d tasks — %s"):format(manifest.name, manifest.out, #states, line))
  if #manifest.slurm_jobs > 0 and not with_queue then
    print("(squeue is not available here: running/queued come from the tasks' own records only)")
  end
  local width = 4
  for _, s in ipairs(states) do width = math.max(width, #s.id) end
  print(("%5s  %-9s  %8s  %-" .. width .. "s  %s"):format("task", "state", "attempts", "cell", "detail"))
  for _, s in ipairs(states) do
    print(("%5d  %-9s  %8d  %-" .. width .. "s  %s"):format(s.task, s.state, s.attempts, s.id, detail(s)))
  end
  return counts
end

------------------------------------------------------------------------------ submit

local RUNNABLE = {pending = true, failed = true, lost = true, preempted = true}

-- The command line of task i (without the program), from the manifest.
local function task_arguments(manifest, index, threads)
  local args = {"run", manifest.recipe}
  if threads then
    args[#args + 1] = "--threads"
    args[#args + 1] = tostring(threads)
  end
  for _, s in ipairs(manifest.sets) do
    args[#args + 1] = "--set"
    args[#args + 1] = s
  end
  args[#args + 1] = "--set"
  args[#args + 1] = "out=" .. manifest.out
  if index then
    args[#args + 1] = "--set"
    args[#args + 1] = "task=" .. index
  end
  return args
end

local function cpu_count()
  local text, code = command_output("nproc")
  return code == 0 and tonumber(text:match("%d+")) or 1
end

local function format_seconds(s)
  local whole = math.floor(s + 0.5)
  if whole >= 3600 then return ("%dh%02dm"):format(whole // 3600, (whole % 3600) // 60) end
  if whole >= 60 then return ("%dm%02ds"):format(whole // 60, whole % 60) end
  return ("%ds"):format(whole)
end

-- The pool's slots: one environment per task that may run at once. With several GPUs, one task
-- per GPU; with tasks_per_gpu = k, k per GPU (a small model leaves most of a GPU idle), the slots
-- going round the GPUs so that the first tasks spread over all of them. `visible` is this process's
-- CUDA_VISIBLE_DEVICES: a task gets its g-th entry (a scheduler's GPU number, a UUID, a MIG
-- instance), so that it runs on a GPU given to this process; unset, GPU g is "g".
function batch.gpu_slots(o, visible)
  local gpus, per_gpu = o.gpus or 0, o.tasks_per_gpu
  if per_gpu == nil and (gpus <= 1 or o.jobs) then return nil end
  local names = {}
  for name in (visible or ""):gmatch("[^,%s]+") do names[#names + 1] = name end
  local slots = {}
  for _ = 1, per_gpu or 1 do
    for g = 0, gpus - 1 do slots[#slots + 1] = {CUDA_VISIBLE_DEVICES = names[g + 1] or tostring(g)} end
  end
  return slots
end

local function run_local(manifest, to_run, o)
  local slots = batch.gpu_slots(o, os.getenv("CUDA_VISIBLE_DEVICES"))
  local jobs = slots and #slots or (o.jobs or 1)
  local threads = o.threads or math.max(1, cpu_count() // jobs)
  local exe = lmkit.process.executable()
  local tasks = {}
  for k, index in ipairs(to_run) do
    local argv = {exe}
    for _, a in ipairs(task_arguments(manifest, index, threads)) do argv[#argv + 1] = a end
    tasks[k] = {argv = argv, log = batch.log_file(manifest.out, index), env = {LMKIT_PROGRESS = "lines"}}
  end
  print(("running %d task%s on this machine, %d at a time (%d thread%s each%s); logs in %s"):format(
    #to_run, #to_run == 1 and "" or "s", jobs, threads, threads == 1 and "" or "s",
    slots and (o.tasks_per_gpu and (", %d per GPU"):format(o.tasks_per_gpu) or ", one GPU each") or "", paths(manifest.out).logs))
  local finished, failed, total_seconds = 0, 0, 0
  local result = lmkit.process.run_pool{
    tasks = tasks, jobs = jobs, slots = slots,
    on_event = function(e)
      local index = to_run[e.task]
      local id = manifest.tasks[index].id
      if e.kind == "started" then
        print(("  start  task %d (%s)%s"):format(index, id, slots and (" on GPU " .. slots[e.slot].CUDA_VISIBLE_DEVICES) or ""))
        return
      end
      finished = finished + 1
      total_seconds = total_seconds + e.seconds
      local how
      if e.exit_code == 0 then
        how = "done"
      elseif e.exit_code == PREEMPTED_EXIT then
        how = "preempted (state saved)"
      else
        failed = failed + 1
        how = e.signal and ("killed by signal " .. e.signal) or ("failed (exit " .. e.exit_code .. ")")
        how = how .. ", log: " .. batch.log_file(manifest.out, index)
      end
      local left = #to_run - finished
      local eta = left > 0 and (" · ETA " .. format_seconds(total_seconds / finished * math.ceil(left / jobs))) or ""
      print(("  [%d/%d] task %d (%s) %s in %s%s"):format(finished, #to_run, index, id, how,
                                                         format_seconds(e.seconds), eta))
    end,
  }
  io.stdout:flush()
  if result.signal ~= 0 then
    print(("stopped by signal %d: the running tasks saved their state; run the same `lmkit batch` to resume"):format(result.signal))
    return PREEMPTED_EXIT
  end
  return failed > 0 and 1 or 0
end

local function sbatch_script(manifest, o)
  local lines = {
    "#!/bin/bash",
    ("# lmkit batch: recipe %s, one Slurm array task per recipe task (array index = task)."):format(manifest.name),
    "# Written by `lmkit batch --backend slurm`; it submits this file with --array=<the tasks to run>.",
    "#SBATCH --job-name=lmkit-" .. manifest.name,
    "#SBATCH --output=" .. paths(manifest.out).logs .. "/task-%a.log",
    "#SBATCH --open-mode=append",
    "#SBATCH --ntasks=1",
  }
  local function option(name, value)
    if value ~= nil and value ~= "" and value ~= 0 then lines[#lines + 1] = ("#SBATCH --%s=%s"):format(name, tostring(value)) end
  end
  option("partition", o.partition)
  option("account", o.account)
  option("time", o.time)
  option("cpus-per-task", o.cpus_per_task)
  option("gpus-per-task", o.gpus_per_task)
  if o.requeue then lines[#lines + 1] = "#SBATCH --requeue" end
  -- The signal before the time limit goes to this script (B:), which passes it on to lmkit.
  option("signal", "B:USR1@" .. tostring(o.signal_lead or 120))
  for _, extra in ipairs(o.sbatch_args or {}) do lines[#lines + 1] = "#SBATCH " .. extra end
  local args = {quote(manifest.lmkit)}
  for _, a in ipairs(task_arguments(manifest, nil, nil)) do args[#args + 1] = quote(a) end
  local body = [[
set -u
task=${SLURM_ARRAY_TASK_ID:?this script runs as a Slurm array task: sbatch --array=...}
me=${SLURM_ARRAY_JOB_ID}_${task}   # never $SLURM_JOB_ID: for one task of the array it names the whole array
echo "== lmkit task $task ($me) on $(hostname), attempt $(( ${SLURM_RESTART_COUNT:-0} + 1 )), $(date -u +%FT%TZ)"
child= signalled=
# SIGTERM (preemption, scancel --signal) or SIGUSR1 (before the time limit): lmkit saves its training
# state at the next step and exits with 75.
forward() { signalled=$1; [ -n "$child" ] && kill -s "$1" "$child" 2>/dev/null; }
trap 'forward TERM' TERM
trap 'forward USR1' USR1
COMMAND --threads "${SLURM_CPUS_PER_TASK:-1}" --set "task=$task" &
child=$!
status=0
wait "$child" || status=$?
# A trapped signal ends `wait` early: wait again until lmkit has saved its state and exited.
while kill -0 "$child" 2>/dev/null; do status=0; wait "$child" || status=$?; done
if [ -n "$signalled" ] && [ "$status" != 0 ]; then
  if REQUEUE; then
    echo "== $signalled received, lmkit exited with $status: requeueing $me to resume"
    scontrol requeue "$me" && exit 0
  fi
  echo "== $signalled received, lmkit exited with $status: not requeued; \`lmkit batch\` again resumes it"
fi
echo "== task $task ended with status $status, $(date -u +%FT%TZ)"
exit "$status"
]]
  body = body:gsub("COMMAND", function() return table.concat(args, " ") end)
  body = body:gsub("REQUEUE", o.requeue and "true" or "false")
  return table.concat(lines, "\n") .. "\n" .. body
end

local function submit_slurm(manifest, to_run, o)
  if not have_command("sbatch") then
    fail("lmkit batch: `sbatch` is not on PATH: run on a Slurm login node, or use --backend local")
  end
  local script = paths(manifest.out).slurm .. "/array.sbatch"
  mkdir(paths(manifest.out).slurm)
  lmkit.write_file(script, sbatch_script(manifest, o))
  local array = batch.index_ranges(to_run)
  if o.jobs then array = array .. "%" .. o.jobs end
  local command = ("sbatch --parsable --chdir=%s --array=%s %s"):format(
    quote(lmkit.process.absolute(".")), array, quote(script))
  if o.dry_run then
    print("would submit: " .. command)
    return 0
  end
  local text, code = command_output(command)
  local job = code == 0 and text:match("^%s*(%d+)")
  if not job then
    fail(("lmkit batch: sbatch failed (exit %s): %s\n  command: %s"):format(tostring(code), first_line(text), command))
  end
  manifest.slurm_jobs[#manifest.slurm_jobs + 1] = {job = job, tasks = to_run, array = array,
                                                    submitted = os.date("!%Y-%m-%dT%H:%M:%SZ")}
  write_manifest(manifest)
  print(("submitted Slurm array job %s: tasks %s (script %s)"):format(job, array, script))
  return 0
end

-- Polls until no task of ours is queued or running; prints a line whenever the counts change.
local function wait_for_slurm(manifest, o)
  local previous, start = nil, lmkit.clock()
  local timeout = o.wait_timeout or 0
  while true do
    local states, with_queue = batch.task_states(manifest)
    if not with_queue then
      -- Without Slurm's queue, queued tasks look pending and dead ones running: waiting would guess.
      fail(("lmkit batch --wait: cannot read Slurm's queue (squeue missing or failing); the jobs go on: `lmkit status %s`")
             :format(manifest.out))
    end
    local line, counts = summary_line(states)
    if line ~= previous then
      print(("  [%s] %s"):format(format_seconds(lmkit.clock() - start), line))
      io.stdout:flush()
      previous = line
    end
    if counts.running + counts.queued + counts.requeued == 0 then return states end
    if timeout > 0 and lmkit.clock() - start > timeout then
      print(("stopped waiting after %s; the jobs go on: `lmkit status %s`"):format(format_seconds(timeout), manifest.out))
      return states
    end
    lmkit.process.sleep(o.poll_seconds or 2)
  end
end

-- `lmkit batch RECIPE ...`: o = {recipe=, backend=, jobs=, tasks_per_gpu=, gpus=, threads=, partition=, account=, time=,
-- cpus_per_task=, gpus_per_task=, requeue=, signal_lead=, sbatch_args=, sets=, wait=, dry_run=}.
-- Returns the exit status.
local submit_locked

local function submit(o)
  if o.tasks_per_gpu ~= nil then
    local k = o.tasks_per_gpu
    if math.type(k) ~= "integer" or k < 1 then
      fail(("lmkit batch: --tasks-per-gpu must be an integer ≥ 1, got %s"):format(tostring(k)))
    elseif (o.backend or "local") ~= "local" then
      fail("lmkit batch: --tasks-per-gpu is the local backend's; on Slurm, tasks share a GPU through the " ..
           "cluster's GPU sharing (e.g. --sbatch-arg=--gres=shard:1, docs/cluster.md \"Sharing a GPU\")")
    elseif o.jobs then
      fail(("lmkit batch: give --jobs or --tasks-per-gpu, not both (--tasks-per-gpu %d runs %d × GPUs at once)")
             :format(k, k))
    elseif (o.gpus or 0) < 1 then
      fail("lmkit batch: --tasks-per-gpu shares GPUs among tasks, but this process sees no CUDA device " ..
           "(`lmkit --version` says why); --jobs N runs N tasks at once on the CPU")
    end
  end
  local path = lmkit.process.absolute(o.recipe)
  local not_a_recipe = ("lmkit batch: %s is not a grid recipe: it does not return lmkit.recipe.define{...} " ..
                        "(docs/recipes.md). `lmkit run %s` runs plain scripts."):format(path, o.recipe)
  -- A script that never mentions define is not run at all: running it only to find that out would
  -- train, print or fail on the batch's own settings (a configure script: "unknown setting 'out'").
  local file = io.open(path, "r")
  local text = file and file:read("a")
  if file then file:close() end
  if text and not text:find("define", 1, true) then fail(not_a_recipe) end
  local ok, value = pcall(dofile, path)
  if not ok then fail(tostring(value)) end
  if not recipe.is_recipe(value) then fail(not_a_recipe) end
  local sets = {}
  for _, s in ipairs(o.sets or {}) do
    local key = s:match("^([^=]+)=")
    if key == "task" or key == "report_only" then
      fail(("lmkit batch: --set %s is the batch's own (each task gets its task=i); leave it out"):format(s))
    end
    if key == "dry_run" then fail("lmkit batch: --set dry_run is lmkit run's; lmkit batch --dry-run shows what would run") end
    if key ~= "out" then sets[#sets + 1] = s end
  end
  -- out=DIR among o.sets names the folder also when submit is called from Lua (the command line's
  -- --set out=DIR reaches configure as a setting too, and wins).
  local out_set
  for _, s in ipairs(o.sets or {}) do out_set = s:match("^out=(.+)$") or out_set end
  local cfg = value:configure(out_set and {out = out_set} or nil)
  local cells = value:cells(cfg)
  local out = lmkit.process.absolute(cfg.out)
  value.path = path
  local backend = o.backend or "local"
  if backend ~= "local" and backend ~= "slurm" then
    fail(("lmkit batch: unknown backend '%s' (local or slurm)"):format(backend))
  end
  -- One batch process per folder: a second `lmkit batch` on it (at the same moment, or while the
  -- first still runs its tasks) is refused before it reads the tasks' states.
  local p = paths(out)
  mkdir(p.batch)
  -- The lock is the batch folder's own (with its record batch/.lock: lmkit.fs.with_lock on a folder).
  local locked, result = pcall(lmkit.fs.with_lock, p.batch, function()
    return submit_locked(value, out, sets, cells, backend, o)
  end, "lmkit batch " .. path)
  if locked then return result end
  if type(result) == "string" and result:find("' is in use: ", 1, true) then
    fail(("lmkit batch: %s\n`lmkit status %s` follows the batch that holds it."):format(result, out))
  end
  error(result, 0)
end

-- submit's work on the folder, under its lock.
submit_locked = function(value, out, sets, cells, backend, o)
  local manifest = reconcile_manifest(value, out, sets, cells, backend)
  local p = paths(out)
  mkdir(p.tasks)
  mkdir(p.logs)
  write_manifest(manifest)

  local states = batch.task_states(manifest)
  local to_run, busy, done = {}, 0, 0
  for _, s in ipairs(states) do
    if RUNNABLE[s.state] then to_run[#to_run + 1] = s.task
    elseif s.state == "done" then done = done + 1
    else busy = busy + 1 end
  end
  print(("%s: %d tasks in %s — %d done, %d running or queued, %d to run"):format(
    value.name, #cells, out, done, busy, #to_run))
  local status = 0
  if #to_run == 0 then
    print(busy > 0 and ("nothing to start: `lmkit status %s` follows the rest"):format(out)
                   or ("nothing to run: every task is done; `lmkit report %s` renders the report"):format(out))
  elseif backend == "local" then
    if o.dry_run then
      for _, index in ipairs(to_run) do
        print("would run: lmkit " .. table.concat(task_arguments(manifest, index, o.threads), " "))
      end
      return 0
    end
    status = run_local(manifest, to_run, o)
  else
    status = submit_slurm(manifest, to_run, o)
    if status == 0 and o.wait and not o.dry_run then
      local final = wait_for_slurm(manifest, o)
      local _, counts = summary_line(final)
      status = counts.done == #final and 0 or 1
    end
  end
  if backend == "local" or o.wait then
    local counts = batch.print_status(manifest, batch.task_states(manifest))
    if counts.done == #cells then
      print(("all %d tasks done: `lmkit report %s` renders the report"):format(#cells, out))
    end
  end
  return status
end

-- `lmkit status DIR`: the per-task table. Exit status 0 when every task is done, 1 when one failed
-- or was lost, 3 while some are still pending, queued or running.
local function status(o)
  local manifest = batch.read_manifest(lmkit.process.absolute(o.dir))
  local states, with_queue = batch.task_states(manifest)
  local counts = batch.print_status(manifest, states, with_queue)
  if counts.done == #states then return 0 end
  if counts.failed + counts.lost > 0 then return 1 end
  return 3
end

-- `lmkit report DIR`: the batch's recipe run on its folder with report_only=true, in a child lmkit
-- (a fresh Lua state whose settings are the batch's, exactly as `lmkit run` would see them). Its
-- exit status is the report's.
local function report(o)
  local manifest = batch.read_manifest(lmkit.process.absolute(o.dir))
  local command = {quote(lmkit.process.executable())}
  for _, a in ipairs(task_arguments(manifest)) do command[#command + 1] = quote(a) end
  command[#command + 1] = "--set report_only=true"
  io.stdout:flush()
  local _, how, code = os.execute(table.concat(command, " "))
  if how == "signal" then return 128 + code end
  return code
end

-- The entry points of the commands: a user's mistake is printed alone and gives exit status 2.
local function command(fn)
  return function(o)
    local ok, result = xpcall(fn, function(e)
      if getmetatable(e) == UserMistake then return e end
      return debug.traceback(e, 2)
    end, o)
    if ok then return result end
    if getmetatable(result) == UserMistake then
      io.stderr:write(result.message, "\n")
      return 2
    end
    error(result, 0)
  end
end

batch.submit = command(submit)
batch.status = command(status)
batch.report = command(report)

return batch

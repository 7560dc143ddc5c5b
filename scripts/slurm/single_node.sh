#!/usr/bin/env bash
# A private single-node Slurm cluster (munged + slurmctld + slurmd on loopback) for trying
# `lmkit batch --backend slurm` on one machine and for the CI test of the Slurm backend.
#
#   bash scripts/slurm/single_node.sh -- COMMAND [ARGS...]   # start, run COMMAND with SLURM_CONF set, stop
#   source scripts/slurm/single_node.sh; slurm_up DIR; ...; slurm_down   # from another script
#
# Needs root and Debian's slurmctld, slurmd, slurm-client and munge (bash scripts/setup.sh --with-slurm).
# Works without systemd or cgroups; uses free ports (never the system's 6817/6818) and a private munge
# key and socket under DIR, and stops every daemon it started by its PID.

slurm_missing_packages() {
  local missing=()
  for tool in slurmctld slurmd sbatch munged; do command -v "$tool" >/dev/null || missing+=("$tool"); done
  echo "${missing[*]}"
}

# slurm_up DIR: starts the cluster with its state under DIR (created); exports SLURM_CONF.
slurm_up() {
  SLURM_DIR=$1
  SLURM_PIDS=()
  mkdir -p "$SLURM_DIR"/{munge,state,spool,log}
  # munged refuses a socket under a directory others cannot traverse.
  chmod 755 "$SLURM_DIR" "$SLURM_DIR/munge"
  local d=$SLURM_DIR
  while [ "$d" != / ]; do d=$(dirname "$d"); [ -x "$d" ] || chmod o+x "$d"; done

  local port
  port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
  while :; do
    port=$(( 20000 + RANDOM % 20000 ))
    port_in_use "$port" || port_in_use $((port + 1)) || break
  done

  mungekey -c -k "$SLURM_DIR/munge/munge.key" >/dev/null 2>&1 || { echo "slurm_up: mungekey failed" >&2; return 1; }
  munged --foreground --socket="$SLURM_DIR/munge/munge.sock" --key-file="$SLURM_DIR/munge/munge.key" \
         --pid-file="$SLURM_DIR/munge/munged.pid" --log-file="$SLURM_DIR/log/munged.log" \
         --seed-file="$SLURM_DIR/munge/munged.seed" </dev/null >"$SLURM_DIR/log/munged.out" 2>&1 &
  SLURM_PIDS+=($!)
  local ok=
  for _ in $(seq 1 50); do munge -n -S "$SLURM_DIR/munge/munge.sock" >/dev/null 2>&1 && { ok=1; break; }; sleep 0.1; done
  [ -n "$ok" ] || { echo "slurm_up: munged did not start:" >&2; cat "$SLURM_DIR/log/munged.out" >&2; return 1; }

  # cred_expire=10: a requeued task may start again after 10 s instead of the default 120 s.
  cat >"$SLURM_DIR/slurm.conf" <<CONF
ClusterName=lmkit-local
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SLURM_DIR/munge/munge.sock,cred_expire=10
StateSaveLocation=$SLURM_DIR/state
SlurmdSpoolDir=$SLURM_DIR/spool
SlurmctldPidFile=$SLURM_DIR/slurmctld.pid
SlurmdPidFile=$SLURM_DIR/slurmd.pid
SlurmctldLogFile=$SLURM_DIR/log/slurmctld.log
SlurmdLogFile=$SLURM_DIR/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
MailProg=/bin/true
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2,bf_interval=1
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SlurmdTimeout=30
InactiveLimit=0
KillWait=10
MinJobAge=600
NodeName=localhost NodeAddr=127.0.0.1 $(slurmd -C | sed -n '1s/^NodeName=[^ ]* //p') State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF
  export SLURM_CONF=$SLURM_DIR/slurm.conf
  slurmctld -D -f "$SLURM_CONF" </dev/null >"$SLURM_DIR/log/slurmctld.out" 2>&1 &
  SLURM_PIDS+=($!)
  slurmd -D -N localhost -f "$SLURM_CONF" </dev/null >"$SLURM_DIR/log/slurmd.out" 2>&1 &
  SLURM_PIDS+=($!)
  local state=
  for _ in $(seq 1 120); do
    state=$(sinfo -h -n localhost -o %t 2>/dev/null)
    [ "$state" = idle ] && return 0
    sleep 0.25
  done
  echo "slurm_up: the node did not become idle (state '$state'):" >&2
  tail -n 20 "$SLURM_DIR"/log/*.out "$SLURM_DIR"/log/*.log >&2
  return 1
}

# slurm_down: cancels what is left and stops the daemons started by slurm_up (last first).
slurm_down() {
  [ -n "${SLURM_CONF:-}" ] && scancel --me >/dev/null 2>&1
  local pid i
  for _ in $(seq 1 20); do [ -z "$(squeue -h 2>/dev/null)" ] && break; sleep 0.25; done
  for ((i = ${#SLURM_PIDS[@]} - 1; i >= 0; i--)); do
    pid=${SLURM_PIDS[i]}
    kill -TERM "$pid" 2>/dev/null || continue
    for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
    wait "$pid" 2>/dev/null
  done
  SLURM_PIDS=()
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -u
  [ "${1:-}" = -- ] && shift
  [ $# -gt 0 ] || { sed -n '2,10p' "$0"; exit 2; }
  missing=$(slurm_missing_packages)
  [ -z "$missing" ] || { echo "missing: $missing (bash scripts/setup.sh --with-slurm)" >&2; exit 1; }
  [ "$(id -u)" = 0 ] || { echo "single_node.sh: the private cluster runs as root" >&2; exit 1; }
  dir=$(mktemp -d /tmp/lmkit-slurm.XXXXXX)
  trap 'slurm_down; rm -rf "$dir"' EXIT
  trap 'exit 130' INT TERM
  slurm_up "$dir" || exit 1
  "$@"
fi

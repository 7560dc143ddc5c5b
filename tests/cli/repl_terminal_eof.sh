#!/usr/bin/env bash
# repl_terminal_eof.sh LMKIT WORKDIR: the REPL on a terminal (a pseudo-terminal from util-linux's
# `script`). Ctrl-D inside an unfinished statement says so, drops the statement and keeps the
# session (its variables); Ctrl-D at the prompt quits with status 0. Each key is sent once the
# prompt that reads it is on the screen.
set -u
lmkit=$1
work=$2
rm -rf "$work"
mkdir -p "$work"
mkfifo "$work/keys"
LMKIT_HISTORY="$work/history" timeout 120 script -qefc "$lmkit repl" /dev/null <"$work/keys" >"$work/screen" 2>&1 &
repl=$!
exec 3>"$work/keys"
fail() { echo "FAIL: $*"; echo "--- the screen:"; cat -v "$work/screen"; kill $repl 2>/dev/null; exit 1; }
wait_for() {  # wait_for TEXT N: until TEXT is on the screen N times
  for _ in $(seq 1 1200); do
    [ "$(grep -o -F -- "$1" "$work/screen" | wc -l)" -ge "$2" ] && return 0
    kill -0 $repl 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}
wait_for "lmkit> " 1 || fail "no prompt"
printf 'x = 41\n' >&3
wait_for "lmkit> " 2 || fail "no prompt after a statement"
printf 'for i = 1, 2 do\n' >&3
wait_for "   >> " 1 || fail "no continuation prompt"
printf '\004' >&3
wait_for "input ended inside an unfinished statement: dropped it" 1 || fail "Ctrl-D in a statement said nothing"
wait_for "lmkit> " 3 || fail "the session did not go on after Ctrl-D in a statement"
printf 'print("after", x + 1)\n' >&3
wait_for "after	42" 1 || fail "the session's variables were lost"
wait_for "lmkit> " 4 || fail "no prompt after print"
printf '\004' >&3
exec 3>&-
wait $repl
status=$?
[ $status -eq 0 ] || fail "Ctrl-D at the prompt: exit status $status"
echo "terminal eof ok"
rm -rf "$work"

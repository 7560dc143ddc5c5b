#!/usr/bin/env bash
# The REPL reading from a pipe: expressions echo their values, statements can span lines, an error
# does not end the session, `_` holds the last value, and a value whose __tostring raises is
# described instead of aborting the REPL (it used to PANIC, exit 134).
set -u
lmkit=$1
output=$(printf '%s\n' \
  '1 + 1' \
  'x = lmkit.ones(2,' \
  '  2)' \
  'x:sum()' \
  'error("oops")' \
  '_:item() * 10' \
  'setmetatable({}, {__tostring = function() error("boom") end})' \
  'function f(a)' \
  '  return a * 3' \
  'end' \
  'f(7)' | "$lmkit" repl 2>&1)
printf '%s\n' "$output"
for want in "2" "tensor(4., float32)" "40.0" "(a table whose __tostring failed: repl:1: boom)" "21"; do
  if ! printf '%s\n' "$output" | grep -Fxq -- "$want"; then
    echo "missing line in REPL output: $want" >&2
    exit 1
  fi
done
if ! printf '%s\n' "$output" | grep -q "^repl:1: oops"; then
  echo "the error message is missing" >&2
  exit 1
fi
echo "repl ok"

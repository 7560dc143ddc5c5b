#!/bin/bash
# manual_complete.sh LMKIT SOURCE_DIR: docs/lmkit.1 names every command `lmkit --help` lists and
# every LMKIT_* environment variable the sources read (C++ and Lua).
set -u
lmkit=$1
source=$2
manual="$source/docs/lmkit.1"
fail() { echo "manual: $1"; exit 1; }
[ -s "$manual" ] || fail "no $manual"
commands=$("$lmkit" --help | sed -n '/^[Ss][Uu][Bb][Cc][Oo][Mm][Mm][Aa][Nn][Dd][Ss]:/,$p' | awk 'NR > 1 && /^  [a-z]/ {print $1}')
[ -n "$commands" ] || fail "lmkit --help lists no subcommands"
for command in $commands; do
  grep -Eq "^\.BI? \"?$command( |\"|$)|^\.BR $command " "$manual" || fail "lmkit $command is not in the COMMANDS section of docs/lmkit.1"
done
variables=$(grep -rhoE '"LMKIT_[A-Z0-9_]+"' "$source/runtime" "$source/ops" "$source/repl" "$source/bindings" | tr -d '"' | sort -u)
[ -n "$variables" ] || fail "no LMKIT_ variable found in the sources"
for variable in $variables; do
  grep -q "^\.B $variable\$" "$manual" || fail "$variable is read by lmkit but not in the ENVIRONMENT section of docs/lmkit.1"
done
echo "manual: $(echo "$commands" | wc -w) commands and $(echo "$variables" | wc -w) variables documented"

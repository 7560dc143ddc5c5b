#!/usr/bin/env bash
# help() fits the terminal: at COLUMNS=50 no line of help(lmkit.train) or help(lmkit) is wider than
# 50 columns (but a single word longer than that), and no word is lost in the wrapping.
set -u
lmkit=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export LC_ALL=C.UTF-8
printf 'help(lmkit.train)\nhelp(lmkit)\n' > "$work/help.lua"
COLUMNS=50 "$lmkit" run "$work/help.lua" > "$work/narrow.txt" 2>&1 || { cat "$work/narrow.txt"; exit 1; }
env -u COLUMNS "$lmkit" run "$work/help.lua" > "$work/wide.txt" 2>&1 || { cat "$work/wide.txt"; exit 1; }
# A line may be wider only when it is one word (a signature no break can split).
while IFS= read -r line; do
  if [ "$(printf '%s' "$line" | wc -L)" -gt 50 ] && [ "$(printf '%s' "$line" | wc -w)" -gt 1 ]; then
    echo "a help line is wider than 50 columns at COLUMNS=50: $line"
    exit 1
  fi
done < "$work/narrow.txt"
[ "$(wc -L < "$work/wide.txt")" -gt 50 ] || { echo "the unwrapped help should have longer lines"; exit 1; }
[ "$(tr -s ' \n' '\n\n' < "$work/narrow.txt")" = "$(tr -s ' \n' '\n\n' < "$work/wide.txt")" ] ||
  { echo "wrapping changed the words"; exit 1; }
echo "help width ok"

#!/bin/bash
# help_pager.sh LMKIT WORKDIR: help() longer than the terminal goes through $PAGER (a file it reads,
# so quitting it early is harmless); into a pipe or a file the text comes as it is.
set -u
lmkit=$1
work=$2
fail() { echo "help pager: $1"; exit 1; }
command -v script >/dev/null || { echo "help pager: needs script(1)"; exit 77; }
rm -rf "$work"
mkdir -p "$work"
printf '#!/bin/sh\necho "paged $(wc -l < "$1") lines of $(head -c 6 "$1")"\n' >"$work/pager"
chmod +x "$work/pager"
echo 'help()' >"$work/help.lua"
echo 'help(lmkit.zeros)' >"$work/short.lua"
# A terminal (script(1) gives the program one) 20 rows high: all of lmkit's help goes to the pager.
out=$(PAGER="$work/pager" LINES=20 script -qec "'$lmkit' run '$work/help.lua'" /dev/null 2>&1)
echo "$out" | grep -Eq "paged [0-9]{2,} lines of lmkit" || fail "help() on a terminal was not paged: $(echo "$out" | head -5)"
# A short help fits the screen: written as it is.
out=$(PAGER="$work/pager" LINES=20 script -qec "'$lmkit' run '$work/short.lua'" /dev/null 2>&1)
echo "$out" | grep -q "paged" && fail "a short help was paged: $out"
echo "$out" | grep -qF "lmkit.zeros" || fail "a short help was not written: $out"
# Into a pipe: the whole text, no pager.
out=$(PAGER="$work/pager" LINES=20 "$lmkit" run "$work/help.lua" 2>&1)
echo "$out" | grep -q "paged" && fail "help() into a pipe was paged"
[ "$(echo "$out" | wc -l)" -gt 40 ] || fail "help() into a pipe is short: $(echo "$out" | wc -l) lines"
echo "help pager: every check passed"

#!/usr/bin/env bash
# scripts/get_data.sh offline: small archives in the upstream layouts, served through --from, are
# verified against a checksum list and unpacked as data/<name>/{train,valid,test}.txt; a tampered
# archive fails verification and leaves the installed copy untouched. Prints "get_data ok".
set -euo pipefail
script="$1"
for tool in zip unzip tar sha256sum; do
  command -v "$tool" >/dev/null || { echo "skipped: $tool is not installed"; exit 77; }
done
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"

fail() { echo "FAIL: $*"; exit 1; }

# Mikolov's tarball layout and the WikiText zip layout, with tiny contents.
mkdir -p src/simple-examples/data src/wikitext-2 archives
printf ' a b c \n d e \n' > src/simple-examples/data/ptb.train.txt
printf ' a b \n' > src/simple-examples/data/ptb.valid.txt
printf ' c \n' > src/simple-examples/data/ptb.test.txt
printf ' = T = \n\n x y \n' > src/wikitext-2/wiki.train.tokens
printf ' x \n' > src/wikitext-2/wiki.valid.tokens
printf ' y \n' > src/wikitext-2/wiki.test.tokens
tar -czf archives/simple-examples.tgz -C src simple-examples
(cd src && zip -qr ../archives/wikitext-2-v1.zip wikitext-2)

sum() { sha256sum "$1" | cut -d' ' -f1; }
cat > checks.txt <<LIST
# test list
sha256 $(sum src/simple-examples/data/ptb.train.txt) ptb/train.txt
tokens 7 ptb/train.txt
tokens 3 ptb/valid.txt
sha256 $(sum src/wikitext-2/wiki.test.tokens) wikitext-2/test.txt
tokens 8 wikitext-2/train.txt
LIST

"$script" ptb wt2 --from archives --dest data --checksums checks.txt 2> log.txt || { cat log.txt; fail "install failed"; }
cmp data/ptb/train.txt src/simple-examples/data/ptb.train.txt || fail "ptb/train.txt differs"
cmp data/wikitext-2/valid.txt src/wikitext-2/wiki.valid.tokens || fail "wikitext-2/valid.txt differs"
grep -q "ptb: 3 checks passed" log.txt || { cat log.txt; fail "ptb checks not reported"; }
grep -q "note: wikitext-2/valid.txt has no checksum entry" log.txt || fail "unverified file not reported"
[ -z "$(ls -A data | grep -v -e '^ptb$' -e '^wikitext-2$')" ] || fail "temporary files left: $(ls -A data)"

# A tampered archive: verification fails, names the file, and the installed copy stays.
printf ' a b c \n d e f \n' > src/simple-examples/data/ptb.train.txt
tar -czf archives/simple-examples.tgz -C src simple-examples
if "$script" ptb --from archives --dest data --checksums checks.txt 2> log.txt; then fail "tampered archive accepted"; fi
grep -q "verification failed: ptb/train.txt has sha256" log.txt || { cat log.txt; fail "no verification message"; }
grep -q "d e \$" data/ptb/train.txt || fail "installed copy was replaced"

# An archive missing from --from is named.
if "$script" wikitext-103 --from archives --dest data --checksums checks.txt 2> log.txt; then fail "missing archive accepted"; fi
grep -q "wikitext-103-v1.zip is not in archives" log.txt || { cat log.txt; fail "missing archive not named"; }

# --print-checksums gives lines in the list's format.
"$script" wt2 --from archives --dest data --checksums checks.txt --print-checksums 2>/dev/null > printed.txt
grep -q "^tokens 8 wikitext-2/train.txt$" printed.txt || { cat printed.txt; fail "printed checksums"; }
echo "get_data ok"

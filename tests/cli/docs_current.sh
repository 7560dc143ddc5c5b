#!/usr/bin/env bash
# docs/lua-api.md must be what scripts/lua_api_doc.lua generates from the current doc strings.
set -euo pipefail
lmkit=$1
root=$2
generated=$(mktemp)
trap 'rm -f "$generated"' EXIT
"$lmkit" run "$root/scripts/lua_api_doc.lua" > "$generated"
if ! diff -u "$root/docs/lua-api.md" "$generated"; then
  echo "docs/lua-api.md is out of date: run ./build/lmkit run scripts/lua_api_doc.lua > docs/lua-api.md" >&2
  exit 1
fi
echo "docs/lua-api.md is current"
# Every code fence of the docs is closed: an open one renders the rest of the page as code
# (docs/reports-and-plots.md once left a latex block open over 50 lines of prose).
for page in "$root"/docs/*.md "$root"/README.md; do
  fences=$(grep -c '^[[:space:]]*```' "$page" || true)
  if [ $((fences % 2)) -ne 0 ]; then
    echo "$page has $fences code fences: one is never closed" >&2
    exit 1
  fi
done
echo "every code fence of the docs is closed"

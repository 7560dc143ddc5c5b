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

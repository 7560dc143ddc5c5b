#!/usr/bin/env bash
# expect_failure.sh REGEX command...: the command must exit non-zero and print (stdout or stderr)
# something matching the extended regular expression.
set -u
regex=$1
shift
output=$("$@" 2>&1)
status=$?
printf '%s\n' "$output"
if [ "$status" -eq 0 ]; then
  echo "expected a non-zero exit status, got 0" >&2
  exit 1
fi
if ! printf '%s' "$output" | tr '\n' '\r' | grep -Eq -e "$(printf '%s' "$regex")"; then
  echo "output does not match: $regex" >&2
  exit 1
fi
echo "failed as expected (status $status)"

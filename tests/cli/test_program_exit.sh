#!/usr/bin/env bash
# test_program_exit.sh LMKIT_TESTS: the test program's aids for a crash at the process's end
# (tests/support/test_main.cpp). With LMKIT_TEST_MILESTONES=1 it says when the tests returned and
# when the statics made during them are destroyed; with LMKIT_TEST_QUICK_EXIT=1 as well, it ends
# right after the tests (the teardown's milestone never comes) with the tests' result.
set -u
program=$1
# Each run sets the variables it means (a caller's own exported ones must not change the outcome).
filter=PlifTest.SlopeGradientIsDeterministic
fail() { echo "test_program_exit.sh: $*" >&2; printf '%s\n' "$output" >&2; exit 1; }

output=$(env -u LMKIT_TEST_QUICK_EXIT LMKIT_TEST_MILESTONES=1 "$program" --gtest_filter="$filter" 2>&1)
status=$?
[ "$status" = 0 ] || fail "a normal run exited $status"
grep -q '^\[ milestone \] main: the tests returned 0; atexit handlers' <<<"$output" || fail "no milestone when the tests returned"
grep -q '^\[ milestone \] exit: the statics made during the tests are destroyed' <<<"$output" || fail "no milestone in the teardown"

output=$(env LMKIT_TEST_MILESTONES=1 LMKIT_TEST_QUICK_EXIT=1 "$program" --gtest_filter="$filter" 2>&1)
status=$?
[ "$status" = 0 ] || fail "a quick exit of passing tests exited $status"
grep -q '^\[ milestone \] main: the tests returned 0; quick exit' <<<"$output" || fail "no quick-exit milestone"
! grep -q 'exit: the statics made during the tests' <<<"$output" || fail "the teardown ran despite LMKIT_TEST_QUICK_EXIT=1"
grep -q '^\[  PASSED  \] 1 test' <<<"$output" || fail "the tests' report is missing (flushed before the quick exit?)"

# Without the variables the program says nothing of its own.
output=$(env -u LMKIT_TEST_MILESTONES -u LMKIT_TEST_QUICK_EXIT "$program" --gtest_filter="$filter" 2>&1)
! grep -q 'milestone' <<<"$output" || fail "milestones without LMKIT_TEST_MILESTONES"
echo "test_program_exit.sh: milestones and the quick exit as documented"

# shellcheck shell=bash
# Sourced first by the shell tests that ctest runs: how a test skips (exit 77, which ctest reports
# as skipped, with the reason printed), fails (one line, exit 1), and gets its temporary directory.
# SIGMATRACE_KEEP_TEST_DIRS=1 keeps that directory (its path is printed); the variable is taken out
# of the environment here, since the profiler refuses SIGMATRACE_* variables it does not know.
set -u
skip() { echo "SKIPPED: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
keep_test_dirs=${SIGMATRACE_KEEP_TEST_DIRS:-}
unset SIGMATRACE_KEEP_TEST_DIRS

# test_work_dir NAME [TEMPLATE]: sets NAME to a new temporary directory (mktemp -d TEMPLATE),
# removed when the test exits unless it is kept.
test_work_dir() {
  local dir
  dir=$(mktemp -d ${2:+"$2"}) || fail "cannot create a temporary directory"
  printf -v "$1" %s "$dir"
  if [ -n "$keep_test_dirs" ]; then
    echo "keeping $dir"
  else
    # shellcheck disable=SC2064  # the directory is fixed now
    trap "rm -rf '$dir'" EXIT
  fi
}

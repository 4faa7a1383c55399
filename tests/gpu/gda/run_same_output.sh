#!/usr/bin/env bash
# Runs a GPU program untraced and under `sigmatrace profile`; fails unless both exit the same way
# and print the same. Exit 77 (skipped) when the untraced run says so (no GPU).
#   run_same_output.sh SIGMATRACE PROGRAM [ARGS...]
set -u
sigmatrace=$1; shift
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$@" >"$dir/untraced.out" 2>"$dir/untraced.err"
untraced=$?
if [ "$untraced" = 77 ]; then cat "$dir/untraced.out"; exit 77; fi
"$sigmatrace" profile -o "$dir/exp" -- "$@" >"$dir/traced.out" 2>"$dir/traced.err"
traced=$?
cat "$dir/traced.out"
if [ "$untraced" != "$traced" ]; then
  echo "run_same_output: exit status $untraced untraced, $traced traced"; cat "$dir/traced.err"; exit 1
fi
if ! diff "$dir/untraced.out" "$dir/traced.out"; then
  echo "run_same_output: the traced output differs (above: < untraced, > traced)"; exit 1
fi
echo "run_same_output: same output and exit status ($traced) traced and untraced"

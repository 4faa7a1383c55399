#!/bin/bash
# Runs one unmodified program on softnic and checks its exit code and output.
# Usage: run_single.sh LIBDIR "COMMAND ARGS" REGEX [ENV=VALUE...]
set -u
libdir=$1 cmd=$2 regex=$3
shift 3
export LD_LIBRARY_PATH=$libdir
export SOFTNIC_FABRIC="t-single-$$"
output=$(env "$@" timeout 30 $cmd 2>&1)
rc=$?
rm -f "/dev/shm/softnic-$SOFTNIC_FABRIC.lock"
if [ $rc -ne 0 ] || ! grep -Eq "$regex" <<<"$output"; then
  echo "FAIL: rc=$rc, expected /$regex/"
  echo "$output"
  exit 1
fi
echo "$output" | head -20

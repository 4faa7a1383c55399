#!/bin/bash
# expect_error.sh RC LINE COMMAND...: COMMAND must exit with RC and print exactly LINE (stdout and
# stderr together): a malformed setting is named in one line and stops the program.
set -u
want_rc=$1 want=$2
shift 2
out=$("$@" 2>&1)
rc=$?
echo "$out"
[ "$rc" = "$want_rc" ] || { echo "FAIL: exit $rc, expected $want_rc"; exit 1; }
[ "$out" = "$want" ] || { echo "FAIL: expected exactly: $want"; exit 1; }
echo "PASS"

#!/usr/bin/env bash
# A gda pair (run_gda_pair.sh) with both PEs under `sigmatrace profile` (doorbells forwarded),
# then the check that the trace holds exactly the doorbells each PE's GPU rang
# (doorbell_trace_check). Exit 77 (skip) without a usable CUDA device, like the pair itself.
# usage: run_traced_pair.sh SIGMATRACE CHECK PROBE BENCH SOFTNIC_LIBDIR TEST WARMUP ITERS
# Environment: as run_gda_pair.sh; GDA_TRACE_DIR keeps the experiment there (default: a temporary
# directory, removed whatever the outcome, a skip included); GDA_CHECK_FLAGS are passed to the
# check (--wqes with SIGMATRACE_DOORBELLS=wqe).
set -u
sigmatrace=$1 check=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
tmp=""
[ -z "${GDA_TRACE_DIR:-}" ] && tmp=$(mktemp -d /tmp/gda-trace.XXXXXX)
exp=${GDA_TRACE_DIR:-$tmp/exp}
log=$(mktemp /tmp/gda-traced-pair.XXXXXX)
trap 'rm -f "$log"; [ -z "$tmp" ] || rm -rf "$tmp"' EXIT
export SIGMATRACE_RUN_ID="gda-traced-$$"
GDA_WRAP="$sigmatrace profile -o $exp --" "$here/run_gda_pair.sh" "$@" > "$log" 2>&1
rc=$?
cat "$log"
[ $rc -eq 77 ] && exit 77
if [ $rc -ne 0 ]; then echo "traced gda pair failed (rc $rc)"; exit 1; fi
# shellcheck disable=SC2086
"$check" ${GDA_CHECK_FLAGS:-} "$exp" "$log"

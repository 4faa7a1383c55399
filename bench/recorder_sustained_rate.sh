#!/bin/bash
# The recorder's sustained rate: for each codec and number of recording threads, the highest
# offered rate (events/s per process) at which nothing is dropped, found by bisection over runs
# of recorder_sustained_rate (the clock runs through every chunk hand-over), and what an event
# costs the recording thread when the writer keeps up and when it drops. The harness
# (bench/lib/harness.sh) runs it: the kinds are codecs (SIGMATRACE_COMPRESSION: lz4, zstd, none;
# the first the baseline), the cases each number of recording threads with each number of writer
# threads (t4w1: 4 recording threads, SIGMATRACE_WRITER_THREADS=1); one run is one bisection.
# Metrics: unpaced offered/s, drop fraction and ns/event (flat out); zero-drop rate (events/s; 0
# when every rate tried dropped), its MB/s written, B/event and ns/event; drops_from_per_s (the
# lowest rate seen dropping, absent when the writer kept up flat out).
#   bench/recorder_sustained_rate.sh [NAME=VALUE...]
#   BUILD, OUT, KINDS (lz4 zstd none), REPS (1): the harness's settings; RUN_SECONDS (2, per
#   program run), THREADS ("1 2 4 8"), STEPS (6, of the bisection), WRITERS ("1")
set -u
# shellcheck source=bench/lib/harness.sh
. "$(dirname "$0")/lib/harness.sh"
bench_args "BUILD RUN_SECONDS THREADS KINDS STEPS WRITERS" "$@"
bench_default KINDS "lz4 zstd none"
bench_default REPS 1
bench_default RUN_SECONDS 2
bench_default THREADS "1 2 4 8"
bench_default STEPS 6
bench_default WRITERS 1
BENCH_KIND_PATTERNS="lz4 zstd none"
BENCH_TITLE="recorder sustained rate, $RUN_SECONDS s per program run, $STEPS bisection steps"
for t in $THREADS; do for w in $WRITERS; do BENCH_CASES+=" t${t}w$w"; done; done
prog=$BUILD/bench/bin/recorder_sustained_rate
[ -x "$prog" ] || bench_skip "no $prog (build the recorder_sustained_rate target)"

field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p"; }  # key -> value of a result line
rate_run() {  # THREADS WRITERS RATE_PER_THREAD -> result line (0: unpaced)
  SIGMATRACE_WRITER_THREADS=$2 SIGMATRACE_COMPRESSION=$kind "$prog" "$1" "$3" "$RUN_SECONDS" | tee -a "$run_dir/lines.txt"
}

bench_run() {
  local t w top lo hi mid best="" fail line
  [[ $case_name =~ ^t([0-9]+)w([0-9]+)$ ]] || return 2
  t=${BASH_REMATCH[1]} w=${BASH_REMATCH[2]}
  top=$(rate_run "$t" "$w" 0)
  bench_record unpaced_offered_per_s "$(field offered_per_s <<< "$top")" || return 1
  bench_record unpaced_drop_fraction "$(field drop_fraction <<< "$top")"
  bench_record unpaced_ns_per_event "$(field ns_per_event <<< "$top")"
  lo=0 hi=$(awk -v r="$(field offered_per_s <<< "$top")" -v t="$t" 'BEGIN { printf "%.0f", r / t }') fail=$(field offered_per_s <<< "$top")
  if [ "$(field dropped <<< "$top")" = 0 ]; then
    best=$top fail=""  # the writer keeps up with the recording threads flat out
  else
    for _ in $(seq "$STEPS"); do
      mid=$(( (lo + hi) / 2 ))
      line=$(rate_run "$t" "$w" "$mid")
      if [ "$(field dropped <<< "$line")" = 0 ]; then best=$line lo=$mid; else hi=$mid fail=$(field offered_per_s <<< "$line"); fi
    done
  fi
  if [ -z "$best" ]; then
    bench_record zero_drop_rate_per_s 0  # drops at every rate tried
  else
    bench_record zero_drop_rate_per_s "$(field recorded_per_s <<< "$best")"
    bench_record mb_per_s "$(field mb_per_s <<< "$best")"
    bench_record bytes_per_event "$(field bytes_per_event <<< "$best")"
    bench_record ns_per_event "$(field ns_per_event <<< "$best")"
  fi
  [ -z "$fail" ] || bench_record drops_from_per_s "$fail"
}
bench_main

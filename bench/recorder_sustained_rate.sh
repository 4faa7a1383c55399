#!/bin/bash
# The recorder's sustained rate: for each codec and number of recording threads, the highest
# offered rate (events/s per process) at which nothing is dropped, found by bisection over runs
# of recorder_sustained_rate (the clock runs through every chunk hand-over), and what an event
# costs the recording thread when the writer keeps up and when it drops. Prints a Markdown table.
#
#   bench/recorder_sustained_rate.sh [BUILD_DIR=build] [SECONDS=2] [THREADS="1 2 4 8"] [CODECS="lz4 zstd none"] [STEPS=6] [WRITERS="1"]
#
# WRITERS: values of SIGMATRACE_WRITER_THREADS (threads sealing chunks) to run each case with.
set -u
BUILD=${1:-build}
SECONDS_PER_RUN=${2:-2}
THREADS=${3:-"1 2 4 8"}
CODECS=${4:-"lz4 zstd none"}
STEPS=${5:-6}
WRITERS=${6:-1}
B=$BUILD/bench/bin/recorder_sustained_rate
[ -x "$B" ] || { echo "no $B (build the recorder_sustained_rate target)" >&2; exit 1; }
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p"; }  # key -> value of a result line
run() {  # codec threads rate_per_thread -> result line
  SIGMATRACE_WRITER_THREADS=$w SIGMATRACE_COMPRESSION=$1 "$B" "$2" "$3" "$SECONDS_PER_RUN"
}
echo "| codec | writers | threads | unpaced: offered/s | dropped | ns/event | zero-drop rate (events/s) | MB/s written | B/event | ns/event | drops from (events/s) |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for codec in $CODECS; do
 for w in $WRITERS; do
  for t in $THREADS; do
    top=$(run "$codec" "$t" 0)
    top_rate=$(echo "$top" | field offered_per_s)
    top_drop=$(echo "$top" | field drop_fraction)
    lo=0 hi=$(awk -v r="$top_rate" -v t="$t" 'BEGIN { printf "%.0f", r / t }') best="" fail="$top_rate"
    if [ "$(echo "$top" | field dropped)" = 0 ]; then
      best=$top lo=$hi fail="none"  # the writer keeps up with the recording threads flat out
    else
      for _ in $(seq "$STEPS"); do
        mid=$(( (lo + hi) / 2 ))
        line=$(run "$codec" "$t" "$mid")
        if [ "$(echo "$line" | field dropped)" = 0 ]; then best=$line lo=$mid; else hi=$mid fail=$(echo "$line" | field offered_per_s); fi
      done
    fi
    if [ -z "$best" ]; then
      echo "| $codec | $w | $t | $top_rate | $top_drop | $(echo "$top" | field ns_per_event) | (drops at every rate tried) | | | | $fail |"
    else
      echo "| $codec | $w | $t | $top_rate | $top_drop | $(echo "$top" | field ns_per_event) | $(echo "$best" | field recorded_per_s) |" \
        "$(echo "$best" | field mb_per_s) | $(echo "$best" | field bytes_per_event) | $(echo "$best" | field ns_per_event) | $fail |"
    fi
  done
 done
done

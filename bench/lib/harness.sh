# shellcheck shell=bash
# The benchmark harness, sourced by every driver under bench/. The project's rule: performance is
# measured by benchmarks, kinds side by side in one run, rotated, repeated, paired differences with
# an interval. This file owns that loop, so that a driver only says what its kinds are, how to run
# one kind once and which metrics that run yields; every driver has the same settings, results
# files and table.
#
# Settings, as NAME=VALUE arguments or as environment variables (the same names in every driver):
#   BUILD        the build directory (default: the repository's build/)
#   OUT          where results go (default: a new directory in /tmp); the harness replaces its own
#                files there (results.tsv, results.json, table.md, failures.txt, runs/)
#   KINDS        the kinds to run, the first one the baseline the others are paired with;
#                KIND/VAR=VALUE... is KIND with these variables set for its runs only
#   REPS         repetitions: each runs every case in every kind, the kinds' order rotating by one
#                from one repetition to the next (a drift of the machine favours no kind)
#   DEADLINE_S   start no repetition after this many seconds (the table covers those completed)
#   RESULTS_TAR  FILE.tar.gz: the results and the runs' small files (not the traces) packed into it
#
# A driver: sources this file, calls bench_args (its arguments), sets its defaults (bench_default),
# optionally BENCH_CASES (words: what each repetition runs every kind on, e.g. message sizes),
# BENCH_TITLE (the table's first line) and BENCH_KIND_PATTERNS (the kinds it knows, as globs);
# defines bench_run and optionally bench_setup and bench_checks; calls bench_main, which exits.
#   bench_run     one run of one kind: $kind (the name before any /VAR=VALUE; those settings are
#                 exported), $kind_name (the whole name), $case_name, $rep, $run_dir (its own
#                 empty directory). Runs in a subshell, its output going to $run_dir/run.log;
#                 reports its metrics with bench_record; its status is the run's (77: the session
#                 is skipped; other non-zero: the run failed and is left out of the table).
#   bench_setup   before the first run, OUT made (e.g. a sampler writing into OUT).
#   bench_checks  after the table: checks over all runs; a failure fails the session.
# Results: OUT/results.tsv, one record per metric of each run (a run without any metric leaves one
# record with an empty metric): run (its number in the session), rep, case, kind, metric, value,
# rc. OUT/results.json and OUT/table.md: bench/lib/bench_table.py.

BENCH_LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BENCH_ROOT=$(cd "$BENCH_LIB/../.." && pwd)
BENCH_NAME=$(basename "$0")
BENCH_CASES="" BENCH_TITLE="" BENCH_KIND_PATTERNS="*"  # a driver's, never the environment's

bench_die() { echo "$BENCH_NAME: $*" >&2; exit 2; }
bench_skip() { echo "SKIPPED: $BENCH_NAME: $*" >&2; exit 77; }

# bench_args SPEC ARG...: NAME=VALUE arguments become exported settings. Any other argument is the
# driver's former spelling, which SPEC describes (NAME: the next positional argument; -x=NAME or
# --long=NAME: an option with a value; --long=NAME!: a flag, NAME=1; a trailing | joins repeated
# values with |, else with a space): refused with one line spelling the same settings anew.
bench_args() {
  local spec=$1 old=() a w
  shift
  for a in REPEAT:REPS REPEATS:REPS MODES:KINDS; do  # the former names of these settings
    w=${a%%:*}
    [ -z "${!w:-}" ] || bench_die "$w is ${a#*:} now (the same settings in every benchmark: bench/lib/harness.sh)"
  done
  for a in "$@"; do
    if [[ $a =~ ^[A-Za-z_][A-Za-z0-9_]*= ]]; then export "${a?}"; else old+=("$a"); fi
  done
  [ ${#old[@]} = 0 ] || bench_die "settings are NAME=VALUE now: $(_bench_translate "$spec" "${old[@]}")"
}

_bench_translate() {  # SPEC ARG...: the arguments as NAME=VALUE words, or the usage
  local specs=() w name value sep names=() out=() seen=""
  read -r -a specs <<< "$1"
  shift
  for w in "${specs[@]}"; do [[ $w == -* ]] || names+=("$w"); done
  while [ $# -gt 0 ]; do
    name="" value=$1 sep=" "
    if [[ $1 == -* ]]; then
      for w in "${specs[@]}"; do [ "${w%%=*}" = "$1" ] && name=${w#*=}; done
      [ -n "$name" ] || { echo "$0 [NAME=VALUE...] (unknown option $1; see its header)"; return; }
      case $name in
        *!) name=${name%!} value=1 ;;
        *) [ $# -ge 2 ] || { echo "$0 [NAME=VALUE...] ($1 needs a value)"; return; }; value=$2; shift ;;
      esac
      [[ $name == *"|" ]] && name=${name%|} sep="|"
    else
      [ ${#names[@]} -gt 0 ] || { echo "$0 [NAME=VALUE...] (no positional arguments; see its header)"; return; }
      name=${names[0]} names=("${names[@]:1}")
    fi
    if [[ " $seen " == *" $name "* ]]; then  # a repeated option: its values joined
      for w in "${!out[@]}"; do [[ ${out[$w]} == "$name="* ]] && out[w]=${out[$w]}$sep$value; done
    else
      out+=("$name=$value") seen="$seen $name"
    fi
    shift
  done
  printf '%s' "$0"
  for w in "${out[@]}"; do
    if [[ ${w#*=} =~ ^[A-Za-z0-9_./:,+@%-]*$ ]]; then printf ' %s' "$w"; else printf " %s='%s'" "${w%%=*}" "${w#*=}"; fi
  done
  echo
}

# bench_default NAME VALUE: NAME's value unless it was given (an empty value given stays empty).
bench_default() { [ -n "${!1+x}" ] || export "$1=$2"; }

bench_default BUILD "$BENCH_ROOT/build"

# A kind's or case's name as a file name (":", "/", "=", "," and spaces become "-");
# bench_table.py's kind_tag is the same rule.
kind_tag() { local t=${1//[:\/=, ]/-}; echo "$t"; }

# The directory of one run: OUT/runs/[CASE-]KIND-REP (bench_table.py's run_name).
bench_run_name() { echo "${1:+$(kind_tag "$1")-}$(kind_tag "$2")-$3"; }

# bench_record METRIC VALUE: one metric of this run (a number; anything else is said and dropped).
bench_record() {
  local metric=${1//$'\t'/ } value=$2
  if [[ $value =~ ^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$ ]]; then
    printf '%s\t%s\n' "$metric" "$value" >> "$run_dir/metrics.tsv"
  else
    echo "bench_record: $metric: '$value' is not a number: not recorded" >&2
    return 1
  fi
}

# bench_record_json FILE [--by FIELD] KEY...: the numbers under KEY of a JSON object (or, with
# --by, of each object of an array, recorded as "OBJECT[FIELD] KEY"); keys absent are skipped.
bench_record_json() {
  local m v
  while IFS=$'\t' read -r m v; do bench_record "$m" "$v"; done < <(python3 "$BENCH_LIB/json_fields.py" "$@")
}

# bench_say TEXT: a line on the session's console (a run's own output goes to its run.log).
bench_say() { echo "$*" >&3; }

# bench_fail TEXT: said, and the session fails (its metrics still count: see bench_run's status).
bench_fail() {
  bench_say "rep $rep ${case_name:+$case_name }$kind_name: $*"
  echo "rep $rep ${case_name:+$case_name }$kind_name: $*" >> "$OUT/failures.txt"
}

# bench_abort TEXT: as bench_fail, and no further run is started (a failure that spoils the rest).
bench_abort() { bench_fail "$*"; : > "$OUT/.abort"; }

# shellcheck disable=SC2034  # kind, kind_name, case_name and run_dir are for the driver's bench_run
_bench_one() {  # REP CASE KIND: one run, and its records
  local rep=$1 case_name=$2 kind_name=$3 kind run_dir rc settings m v line=""
  IFS=/ read -r -a settings <<< "$kind_name"
  kind=${settings[0]} settings=("${settings[@]:1}")
  run_dir=$OUT/runs/$(bench_run_name "$case_name" "$kind_name" "$rep")
  rm -rf "$run_dir" && mkdir -p "$run_dir"
  ( [ ${#settings[@]} = 0 ] || export "${settings[@]}"; bench_run ) > "$run_dir/run.log" 2>&1 < /dev/null
  rc=$?
  BENCH_RUN=$((BENCH_RUN + 1))
  if [ -s "$run_dir/metrics.tsv" ]; then
    while IFS=$'\t' read -r m v; do
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$BENCH_RUN" "$rep" "$case_name" "$kind_name" "$m" "$v" "$rc" >> "$OUT/results.tsv"
      line+="${line:+, }$m $v"
    done < "$run_dir/metrics.tsv"
  else
    printf '%s\t%s\t%s\t%s\t\t\t%s\n' "$BENCH_RUN" "$rep" "$case_name" "$kind_name" "$rc" >> "$OUT/results.tsv"
  fi
  [ ${#line} -le 160 ] || line="${line:0:157}..."
  bench_say "rep $rep/$REPS ${case_name:+$case_name }$kind_name: ${line:-no metric}$([ "$rc" = 0 ] || echo " (FAILED: status $rc, see $run_dir/run.log)")"
  if [ "$rc" = 77 ]; then
    echo "SKIPPED: $BENCH_NAME: $(sed -n 's/^SKIPPED: //p' "$run_dir/run.log" | tail -1)" >&2
    exit 77
  fi
}

bench_main() {
  local kinds=() cases=() patterns=() k p ok rep c j n failed=0 t0
  read -r -a kinds <<< "${KINDS:-}"
  read -r -a patterns <<< "$BENCH_KIND_PATTERNS"
  [ ${#kinds[@]} -gt 0 ] || bench_die "KINDS is empty"
  [[ ${REPS:-} =~ ^[1-9][0-9]*$ ]] || bench_die "REPS=${REPS:-}: expected an integer >= 1"
  [ -z "${DEADLINE_S:-}" ] || [[ $DEADLINE_S =~ ^[0-9]+$ ]] || bench_die "DEADLINE_S=$DEADLINE_S: expected seconds"
  for k in "${kinds[@]}"; do
    ok=0
    for p in "${patterns[@]}"; do
      # shellcheck disable=SC2053  # the pattern is a glob
      [[ ${k%%/*} == $p ]] && ok=1
    done
    [ $ok = 1 ] || bench_die "KINDS: '${k%%/*}' is not a kind of this benchmark ($BENCH_KIND_PATTERNS)"
    [[ $k =~ ^[^/]+(/[A-Za-z_][A-Za-z0-9_]*=[^/]*)*$ ]] || bench_die "KINDS: '$k' is not KIND or KIND/VAR=VALUE..."
  done
  read -r -a cases <<< "$BENCH_CASES"
  [ ${#cases[@]} -gt 0 ] || cases=("")
  declare -F bench_run > /dev/null || bench_die "defines no bench_run"
  if [ -z "${OUT:-}" ]; then OUT=$(mktemp -d "/tmp/${BENCH_NAME%.sh}.XXXXXX") || exit 1; fi
  mkdir -p "$OUT" || bench_die "cannot create OUT=$OUT"
  OUT=$(cd "$OUT" && pwd)
  export OUT
  rm -rf "$OUT/runs" "$OUT/results.tsv" "$OUT/results.json" "$OUT/table.md" "$OUT/failures.txt" "$OUT/.abort"
  mkdir -p "$OUT/runs"
  printf 'run\trep\tcase\tkind\tmetric\tvalue\trc\n' > "$OUT/results.tsv"
  exec 3>&1
  if declare -F bench_setup > /dev/null; then bench_setup || bench_die "its setup failed"; fi
  BENCH_RUN=0 t0=$(date +%s)
  echo "$BENCH_NAME: kinds ${kinds[*]} (baseline ${kinds[0]}), ${cases[*]:+cases ${cases[*]}, }$REPS repetitions, rotated; results in $OUT"
  for rep in $(seq "$REPS"); do
    if [ -n "${DEADLINE_S:-}" ] && [ $(( $(date +%s) - t0 )) -ge "$DEADLINE_S" ]; then
      echo "DEADLINE_S=$DEADLINE_S reached: $((rep - 1)) of $REPS repetitions run"
      break
    fi
    n=${#kinds[@]}
    for c in "${cases[@]}"; do
      for j in $(seq 0 $((n - 1))); do
        [ -e "$OUT/.abort" ] && break 3
        _bench_one "$rep" "$c" "${kinds[$(( (j + rep - 1) % n ))]}"
      done
    done
  done
  [ ! -e "$OUT/.abort" ] || echo "stopped early: $(tail -1 "$OUT/failures.txt")"
  echo
  python3 "$BENCH_LIB/bench_table.py" --json "$OUT/results.json" --title "$BENCH_TITLE" "$OUT" "${kinds[@]}" > "$OUT/table.md" || failed=1
  cat "$OUT/table.md"
  if declare -F bench_checks > /dev/null; then bench_checks || failed=1; fi
  [ ! -s "$OUT/failures.txt" ] || failed=1
  awk -F '\t' 'NR > 1 && $7 != 0 { bad = 1 } END { exit !bad }' "$OUT/results.tsv" && failed=1  # a run failed
  if [ -n "${RESULTS_TAR:-}" ]; then
    RESULTS_TAR=$(realpath -m "$RESULTS_TAR")
    if (cd "$OUT" && find . -type d -name 'exp*' -prune -o -type f \( -name '*.tsv' -o -name '*.json' -o -name '*.log' \
      -o -name '*.md' -o -name '*.txt' -o -name '*.info' \) -print | tar -czf "$RESULTS_TAR" -T -); then
      echo "results packed: $RESULTS_TAR"
    else
      echo "RESULTS_TAR=$RESULTS_TAR: could not write it"
      failed=1
    fi
  fi
  echo "results: $OUT (results.tsv, results.json, table.md, runs/)"
  exit $failed
}

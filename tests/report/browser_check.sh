# Sourced by the report's browser tests: report_and_check EXP WORK [--baseline DIR] [check_report_dom.py
# options] writes EXP/report.html and WORK/plots (`sigmatrace report --html --plots`), loads the page in
# headless Chromium with its console logged, and checks the DOM it rendered against
# EXP/aggregate.json. Needs $st (the sigmatrace command), $src (the source tree), $browser, fail().
report_and_check() {
  local exp=$1 work=$2 report_args=()
  shift 2
  # --baseline DIR goes to `sigmatrace report` (and its diff, as JSON, to the check).
  if [ "${1:-}" = --baseline ]; then
    report_args=(--baseline "$2")
    "$st" diff "$2" "$exp" --json >"$work/diff.json" || fail "sigmatrace diff failed"
    shift 2
    set -- "$@" --diff "$work/diff.json"
  fi
  "$st" report "$exp" --html "${report_args[@]}" --plots "$work/plots" >"$work/report.log" 2>&1 || { cat "$work/report.log"; fail "report --html --plots failed"; }
  grep -q "report: $exp/report.html" "$work/report.log" || { cat "$work/report.log"; fail "report did not say where report.html is"; }
  # Every console message, whatever its level, is logged as CONSOLE; a profile of its own.
  timeout 120 "$browser" --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$work/profile" \
    --enable-logging=stderr --v=0 --virtual-time-budget=20000 --dump-dom "file://$exp/report.html" \
    >"$work/dom.html" 2>"$work/browser.log" || { tail -20 "$work/browser.log"; fail "the browser failed on report.html"; }
  python3 "$src/tests/report/check_report_dom.py" --aggregate "$exp/aggregate.json" --dom "$work/dom.html" \
    --console "$work/browser.log" --plots "$work/plots" "$@" || fail "report.html does not show what aggregate.json says"
}

# True when a headless Chromium and python3 are there ($browser set to it).
browser_available() {
  browser=${SIGMATRACE_CHROMIUM:-$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)}
  [ -n "$browser" ] && command -v python3 >/dev/null
}

# The browser, or a skip (exit 77) naming what is missing.
find_browser_or_skip() {
  browser_available && return 0
  [ -n "$browser" ] || skip "no headless Chromium (scripts/setup.sh installs Debian's chromium)"
  skip "python3 is not installed"
}

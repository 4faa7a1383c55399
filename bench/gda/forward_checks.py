"""doorbell_forward.sh's checks: that every traced run recorded exactly the doorbells its GPU rang
(the bench's JSON "doorbells": warm-up and timed rounds times the burst; the trace's gpu_doorbell
events, from the run's `sigmatrace info --json` beside it; with bursts, a store the next one
overwrote before the poller looked is not a doorbell of its own, so at least one per burst and no
more than were rung) and, where the kind marks kernels, the one kernel's end
(cuda_kernel_seen_end, or cuda_kernel_end with timed markers). The runs are those of the
harness's OUT/results.tsv, each in OUT/runs/RUN (result.json, result.json.info). A traced run
without its JSON or its info is counted failed: it is the run that went wrong, not one to skip.
Prints one line per kind; exits 1 if any run failed its check.
usage: forward_checks.py OUT KIND... (untraced kinds are not checked)"""
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "lib"))
from bench_table import read_results, run_name  # noqa: E402

MARKERS_OFF = re.compile(r"/SIGMATRACE_KERNEL_MARKERS=(0|off|false)(/|$)")


def events_by_type(info):
    """Each event type's count over the experiment's processes."""
    counts = {}
    for p in info.get("processes", []):
        for t, n in p.get("events_by_type", {}).items():
            counts[t] = counts.get(t, 0) + n
    return counts


def check_run(result_path, markers):
    """None if the run recorded what it should, else why not."""
    try:
        result = json.loads(result_path.read_text())
        rung, burst = result["doorbells"], result["burst"]
    except (OSError, ValueError, KeyError):
        return "no result (the run failed)"
    try:
        counts = events_by_type(json.loads(Path(str(result_path) + ".info").read_text()))
    except (OSError, ValueError):
        return "no readable `sigmatrace info --json`"
    recorded = counts.get("gpu_doorbell", 0)
    if not rung // burst <= recorded <= rung:  # with one in flight: exactly
        bursts = f" in bursts of {burst} (at least {rung // burst})" if burst > 1 else ""
        return f"{recorded} doorbells recorded of {rung} rung{bursts}"
    ends = counts.get("cuda_kernel_seen_end", 0) + counts.get("cuda_kernel_end", 0)
    if markers and ends != 1:
        return f"{ends} kernel ends recorded of 1"
    return None


def main():
    out, kinds = Path(sys.argv[1]), sys.argv[2:]
    # Every run the harness made has its records, whether or not it wrote results.
    try:
        rows = read_results(out)
    except OSError:
        rows = []  # no run at all: every kind fails below
    runs = sorted({(r["kind"], r["case"], r["rep"]) for r in rows}, key=lambda k: (k[1], k[2]))
    failed = False
    for kind in kinds:
        if kind.split("/")[0] == "untraced":
            continue
        markers = not MARKERS_OFF.search(kind)
        names = [run_name(c, k, rep) for k, c, rep in runs if k == kind]
        bad = [(n, why) for n in names if (why := check_run(out / "runs" / n / "result.json", markers))]
        what = "every doorbell rung" + (" and the kernel's end" if markers else "")
        print(f"checks {kind}: {len(names) - len(bad)} of {len(names)} runs recorded {what}")
        for name, why in bad:
            print(f"  {name}: {why}")
        failed |= bool(bad) or not names
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""Paired differences of doorbell_overhead.sh's runs: for each repetition, each kind's median (and
p99) minus the untraced run's of the same repetition, per operation; reported as the median of
those differences with a distribution-free 95 % confidence interval of that median (order
statistics of the binomial), so a target like "forward adds at most 0.5 us" is met only where the
interval's upper end is below it, and refuted only where its lower end is above it.
usage: paired_differences.py RAW_DIR KIND... (the first kind is the baseline: untraced, or any kind
the others are to be paired with, e.g. forward against forward/SIGMATRACE_KERNEL_MARKERS=0)"""
import json
import sys
from pathlib import Path

from pairing import kind_tag, median_ci

raw, kinds = Path(sys.argv[1]), sys.argv[2:]
base = kinds[0]
ops = ["put", "get", "fadd", "pingpong"]


def results(kind, rep):
    """gda_bench's results of one run (a JSON array of one object per benchmark), by benchmark."""
    f = raw / f"{kind_tag(kind)}-{rep}" / "gda_all_pe0.json"
    try:
        rows = json.loads(f.read_text())
    except (OSError, ValueError):
        return {}  # the run failed: doorbell_overhead.sh says so
    return {j.get("benchmark"): j for j in rows if isinstance(j, dict)}


reps = sorted({int(p.name.rsplit("-", 1)[1]) for p in raw.iterdir() if p.is_dir() and p.name.rsplit("-", 1)[-1].isdigit()})
print(f"paired differences to {base} (each repetition's run minus its own {base} run), {len(reps)} repetitions, us:")
print(f"{'operation':<10} {'stat':<7} {'kind':<12} {'n':>3} {'median':>8}  95 % interval of the median")
for op in ops:
    for stat in ("median_us", "p99_us"):
        for kind in kinds[1:]:
            d = []
            for r in reps:
                a, b = results(base, r).get(op), results(kind, r).get(op)
                if a and b and stat in a and stat in b:
                    d.append(b[stat] - a[stat])
            if not d:
                continue
            med, lo, hi, cover = median_ci(d)
            ci = f"[{lo:+.2f}, {hi:+.2f}] ({cover * 100:.1f} %)" if lo is not None else "(too few repetitions for 95 %)"
            print(f"{op:<10} {stat[:-3]:<7} {kind:<12} {len(d):>3} {med:+8.2f}  {ci}")

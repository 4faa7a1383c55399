"""softnic's stage times (SOFTNIC_DEVX_STATS=1) in doorbell_overhead.sh's runs: per kind, the median
over the repetitions of each run's mean time per stage (over every QP and process of the run,
weighted by their counts), and each kind's paired difference to the first kind (each repetition's
run minus that kind's run of the same repetition: the median and its 95 % interval). A stage that
grows with a setting shows where its time goes: a GPU read that waits for a poller's driver call
in the same process grows with the kernel markers, a doorbell seen late grows "SQ read".
usage: softnic_stages.py RAW_DIR KIND... (the first kind is the baseline)"""
import re
import statistics
import sys
from pathlib import Path

from pairing import kind_tag, paired_text

# softnic's stage line (testbed/softnic/devx/devx_debug.cpp, stage_line): name, count, mean, max.
STAGE = re.compile(r"^ {4}(\S.*?)\s+(\d+)\s+mean\s+([0-9.]+) us\s+max\s+([0-9.]+) us$")


def stage_means(text):
    """{stage: mean us} of one run's output, each stage's lines (one per QP or process) weighted
    by their counts, in the order the stages first appear."""
    sums = {}
    for line in text.splitlines():
        m = STAGE.match(line)
        if not m or not int(m[2]):
            continue
        n, total = sums.get(m[1], (0, 0.0))
        sums[m[1]] = (n + int(m[2]), total + int(m[2]) * float(m[3]))
    return {s: total / n for s, (n, total) in sums.items()}


def main():
    raw, kinds = Path(sys.argv[1]), sys.argv[2:]
    runs = {}  # (kind, rep) -> {stage: mean}
    for d in raw.iterdir():
        kind, _, rep = d.name.rpartition("-")
        log = d / "pair.log"
        if d.is_dir() and rep.isdigit() and log.exists():
            runs[(kind, int(rep))] = stage_means(log.read_text(errors="replace"))
    stages = list(dict.fromkeys(s for m in runs.values() for s in m))
    if not stages:
        print(f"softnic stage times: none in the runs of {raw} (SOFTNIC_DEVX_STATS=1 not set?)")
        return 1
    base = kind_tag(kinds[0])
    reps = sorted({r for _, r in runs})
    print("softnic stage times (SOFTNIC_DEVX_STATS=1): median over the runs of each run's mean, and the")
    print(f"paired difference to {kinds[0]}, {len(reps)} repetitions, us:")
    for stage in stages:
        print(f"  {stage}:")
        for kind in kinds:
            tag = kind_tag(kind)
            own = {r: runs[(tag, r)][stage] for r in reps if stage in runs.get((tag, r), {})}
            if not own:
                print(f"    {kind:<44} no run")
                continue
            line = f"    {kind:<44} {len(own):>3} runs {statistics.median(own.values()):9.3f}"
            if tag != base:
                d = [v - runs[(base, r)][stage] for r, v in own.items() if stage in runs.get((base, r), {})]
                if d:
                    line += f"  paired {paired_text(d)}"
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())

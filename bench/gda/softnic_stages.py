"""softnic's stage times (SOFTNIC_DEVX_STATS=1) in one doorbell_overhead.sh run's output: the mean
time per stage over every QP and process of the run, weighted by their counts, printed as
"STAGE<TAB>MEAN_US" lines in the order the stages first appear; doorbell_overhead.sh records them
as the run's metrics "softnic STAGE us", which the harness's table pairs with the first kind's. A
stage that grows with a setting shows where its time goes: a GPU read that waits for a poller's
driver call in the same process grows with the kernel markers, a doorbell seen late grows "SQ read".
usage: softnic_stages.py PAIR_LOG   (exit 1 when the log holds no stage times)"""
import re
import sys

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


def main(path):
    try:
        with open(path, errors="replace") as f:
            means = stage_means(f.read())
    except OSError:
        means = {}
    for stage, mean in means.items():
        print(f"{stage}\t{mean:.4f}")
    return 0 if means else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))

"""bench/gda/paired_differences.py, on results written the way doorbell_overhead.sh leaves them:
the median of the paired differences and its distribution-free 95 % interval (checked against
the published order statistics: for 40 pairs the 14th and 27th, 96.2 %), a run whose results are
missing left out of the pairs, too few repetitions said so, gda_bench's JSON array read whole.
usage: paired_differences_test.py REPOSITORY_ROOT"""
import json
import random
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

SCRIPT = Path(sys.argv.pop(1)) / "bench" / "gda" / "paired_differences.py"


def write_run(raw, tag, rep, medians):
    """gda_all_pe0.json as gda_bench writes it: one object per line, each but the last ending in a comma."""
    d = raw / f"{tag}-{rep}"
    d.mkdir(parents=True)
    rows = [json.dumps({"benchmark": op, "run": True, "median_us": m, "p99_us": m + 10}) for op, m in medians.items()]
    (d / "gda_all_pe0.json").write_text("[\n" + ",\n".join(rows) + "\n]\n")


def run(raw, *kinds):
    out = subprocess.run([sys.executable, str(SCRIPT), str(raw), *kinds], capture_output=True, text=True, check=True)
    return out.stdout


def line(out, op, stat, kind):
    for l in out.splitlines():
        f = l.split()
        if f[:3] == [op, stat, kind]:
            return f
    raise AssertionError(f"no {op} {stat} {kind} line in:\n{out}")


class PairedDifferences(unittest.TestCase):
    def test_median_and_interval_of_forty_pairs(self):
        with tempfile.TemporaryDirectory() as t:
            raw = Path(t)
            diffs = [i / 10 for i in range(1, 41)]  # 0.1 .. 4.0
            random.Random(7).shuffle(diffs)
            for rep, d in enumerate(diffs, 1):
                base = 20 + rep % 7  # the untraced run moves; its pair moves with it
                write_run(raw, "untraced", rep, {"put": base, "get": base + 10})
                write_run(raw, "forward-SIGMATRACE_KERNEL_MARKERS-0", rep, {"put": base + d, "get": base + 10 - d})
            out = run(raw, "untraced", "forward/SIGMATRACE_KERNEL_MARKERS=0")
            self.assertIn("40 repetitions", out)
            # sorted differences 0.1 .. 4.0: the median (2.0 + 2.1) / 2, the interval the 14th and 27th
            self.assertEqual(line(out, "put", "median", "forward/SIGMATRACE_KERNEL_MARKERS=0")[3:],
                             ["40", "+2.05", "[+1.40,", "+2.70]", "(96.2", "%)"])
            self.assertEqual(line(out, "get", "median", "forward/SIGMATRACE_KERNEL_MARKERS=0")[3:],
                             ["40", "-2.05", "[-2.70,", "-1.40]", "(96.2", "%)"])
            # the same pairs with the traced kind as the baseline: the differences change sign
            back = run(raw, "forward/SIGMATRACE_KERNEL_MARKERS=0", "untraced")
            self.assertEqual(line(back, "put", "median", "untraced")[3:5], ["40", "-2.05"])

    def test_a_failed_run_is_left_out_and_too_few_pairs_are_said(self):
        with tempfile.TemporaryDirectory() as t:
            raw = Path(t)
            for rep in range(1, 7):
                write_run(raw, "untraced", rep, {"put": 20})
                if rep != 3:  # this repetition's traced run failed: no results
                    write_run(raw, "forward", rep, {"put": 20 + rep})
                else:
                    (raw / f"forward-{rep}").mkdir()
            f = line(run(raw, "untraced", "forward"), "put", "median", "forward")
            self.assertEqual(f[3:5], ["5", "+4.00"])  # 1, 2, 4, 5, 6
            self.assertIn("too few repetitions", " ".join(f))


if __name__ == "__main__":
    unittest.main()

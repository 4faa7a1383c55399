"""bench/lib/bench_table.py, on results.tsv files written as the harness writes them: the median
of paired differences (each repetition's run minus the baseline's run of the same repetition and
case) and its distribution-free 95 % interval, checked against the published order statistics
(40 pairs: the 14th and 27th, 96.2 %; 10 pairs: the 2nd and 9th) and against an independent
computation (the binomial coverage summed term by term) for every n up to 60; the percent
differences taken per pair; a failed run left out of its pairs and listed; too few pairs said; a
kind without any run said and failed; another baseline chosen on the command line; the table and
results.json the same numbers.
usage: bench_table_test.py REPOSITORY_ROOT"""
import json
import math
import random
import statistics
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

LIB = Path(sys.argv.pop(1)) / "bench" / "lib"
SCRIPT = LIB / "bench_table.py"
sys.path.insert(0, str(LIB))
from bench_table import median_ci  # noqa: E402


def write_results(out, records):
    """records: (rep, case, kind, metric, value, rc), in the order the runs happened."""
    lines = ["run\trep\tcase\tkind\tmetric\tvalue\trc"]
    runs = {}
    for rep, case, kind, metric, value, rc in records:
        n = runs.setdefault((rep, case, kind), len(runs) + 1)
        lines.append(f"{n}\t{rep}\t{case}\t{kind}\t{metric}\t{'' if value is None else value}\t{rc}")
    (Path(out) / "results.tsv").write_text("\n".join(lines) + "\n")


def run(out, *kinds):
    j = Path(out) / "results.json"
    p = subprocess.run([sys.executable, str(SCRIPT), "--json", str(j), "--title", "t", str(out), *kinds],
                       capture_output=True, text=True)
    return p.returncode, p.stdout, json.loads(j.read_text()) if j.exists() else None


def row(doc, kind, metric, case=""):
    return next(r for r in doc["rows"] if (r["case"], r["metric"], r["kind"]) == (case, metric, kind))


def table_row(text, kind, metric, case=None):
    """The cells of a table line."""
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[:3 if case is not None else 2] == ([case] if case is not None else []) + [metric, kind]:
            return cells
    raise AssertionError(f"no {metric} {kind} row in:\n{text}")


def independent_interval(xs):
    """The 95 % interval's ranks, found from the coverage of [x_(k), x_(n+1-k)] summed term by term:
    P(k <= #(x < median) <= n - k) for a Binomial(n, 1/2)."""
    n = len(xs)
    best = None
    for k in range(1, n // 2 + 1):
        cover = sum(math.comb(n, i) for i in range(k, n - k + 1)) / 2 ** n
        if cover >= 0.95:
            best = (k, cover)
    s = sorted(xs)
    return (s[best[0] - 1], s[n - best[0]], best[1]) if best else None


class BenchTable(unittest.TestCase):
    def test_forty_pairs_published_ranks(self):
        with tempfile.TemporaryDirectory() as t:
            diffs = [i / 10 for i in range(1, 41)]  # 0.1 .. 4.0
            random.Random(7).shuffle(diffs)
            recs = []
            for rep, d in enumerate(diffs, 1):
                base = 20 + rep % 7  # the baseline run moves; its pair moves with it
                recs += [(rep, "", "untraced", "put median_us", base, 0), (rep, "", "untraced", "get median_us", base + 10, 0),
                         (rep, "", "forward/X=0", "put median_us", base + d, 0), (rep, "", "forward/X=0", "get median_us", base + 10 - d, 0)]
            write_results(t, recs)
            rc, text, doc = run(t)
            self.assertEqual(rc, 0, text)
            self.assertEqual(doc["kinds"], ["untraced", "forward/X=0"])  # the first repetition's order
            self.assertEqual(doc["repetitions"], 40)
            p = row(doc, "forward/X=0", "put median_us")["paired"]
            # sorted differences 0.1 .. 4.0: the median (2.0 + 2.1) / 2, the interval the 14th and 27th
            self.assertAlmostEqual(p["median"], 2.05)
            self.assertAlmostEqual(p["low"], 1.4)
            self.assertAlmostEqual(p["high"], 2.7)
            self.assertEqual(round(p["coverage"] * 100, 1), 96.2)
            self.assertEqual(p["n"], 40)
            self.assertEqual(table_row(text, "forward/X=0", "put median_us")[2:6],
                             ["40", f"{statistics.median(20 + r % 7 + d for r, d in enumerate(diffs, 1)):.2f}", "+2.05",
                              "[+1.40, +2.70] (96.2 %)"])
            g = row(doc, "forward/X=0", "get median_us")["paired"]
            self.assertAlmostEqual(g["median"], -2.05)
            self.assertAlmostEqual(g["low"], -2.7)
            # the same pairs with the traced kind as the baseline: the differences change sign
            rc, back, doc2 = run(t, "forward/X=0", "untraced")
            self.assertAlmostEqual(row(doc2, "untraced", "put median_us")["paired"]["median"], -2.05)
            self.assertIsNone(row(doc2, "forward/X=0", "put median_us")["paired"])

    def test_percent_per_pair_and_ten_pairs(self):
        with tempfile.TemporaryDirectory() as t:
            recs = []
            for rep in range(1, 11):
                base = 1.0 + rep  # 2 .. 11
                recs += [(rep, "b1", "untraced", "median_us", base, 0), (rep, "b1", "forward", "median_us", base * (1 + rep / 100), 0)]
            write_results(t, recs)
            rc, text, doc = run(t)
            p = row(doc, "forward", "median_us", "b1")["paired"]
            diffs = [(1.0 + r) * r / 100 for r in range(1, 11)]
            lo, hi, cover = independent_interval(diffs)
            self.assertAlmostEqual(p["median"], statistics.median(diffs))
            self.assertAlmostEqual(p["low"], sorted(diffs)[1])  # the 2nd and the 9th of 10
            self.assertAlmostEqual(p["high"], sorted(diffs)[8])
            self.assertAlmostEqual(p["low"], lo)
            self.assertAlmostEqual(p["high"], hi)
            # percent of each pair's own baseline: 1 .. 10 %, not the medians' ratio
            self.assertAlmostEqual(p["percent"]["median"], 5.5)
            self.assertAlmostEqual(p["percent"]["low"], 2.0)
            self.assertAlmostEqual(p["percent"]["high"], 9.0)
            self.assertEqual(table_row(text, "forward", "median_us", "b1")[7:], ["+5.50 %", "[+2.00, +9.00]"])

    def test_interval_matches_an_independent_computation(self):
        rng = random.Random(3)
        for n in range(1, 61):
            xs = [rng.gauss(0, 1) for _ in range(n)]
            med, lo, hi, cover = median_ci(xs)
            self.assertAlmostEqual(med, statistics.median(xs))
            expected = independent_interval(xs)
            if expected is None:
                self.assertIsNone(lo, n)
                self.assertLess(n, 6)
            else:
                self.assertEqual((lo, hi), expected[:2], n)
                self.assertAlmostEqual(cover, expected[2])

    def test_failed_run_left_out_too_few_pairs_and_a_kind_without_runs(self):
        with tempfile.TemporaryDirectory() as t:
            recs = []
            for rep in range(1, 7):
                recs.append((rep, "", "untraced", "rate", 20, 0) if rep != 5 else (rep, "", "untraced", "rate", 0, 1))
                if rep == 3:  # this repetition's traced run failed: recorded without metric
                    recs.append((rep, "", "forward", "", None, 1))
                else:
                    recs.append((rep, "", "forward", "rate", 20 + rep, 0))
                recs.append((rep, "", "wqe", "", None, 2))
            write_results(t, recs)
            rc, text, doc = run(t)
            self.assertEqual(rc, 1)  # wqe never ran
            f = row(doc, "forward", "rate")
            self.assertEqual((f["n"], f["median"]), (5, 24))  # 21, 22, 24, 25, 26
            self.assertEqual(row(doc, "untraced", "rate")["n"], 5)
            self.assertEqual(f["paired"]["n"], 4)  # neither rep 3 (its run failed) nor rep 5 (the baseline's)
            self.assertEqual(f["paired"]["median"], 3)  # 1, 2, 4, 6
            self.assertIsNone(f["paired"]["low"])
            self.assertIn("too few pairs", table_row(text, "forward", "rate"))
            self.assertEqual(table_row(text, "wqe", "rate")[2:4], ["0", "no run"])
            self.assertIn({"rep": 3, "case": "", "kind": "forward", "rc": 1}, doc["failed"])
            self.assertEqual(len(doc["failed"]), 8)
            self.assertIn("- failed: rep 3 forward, status 1", text)
            self.assertIn("- wqe: no successful run", text)

    def test_no_results(self):
        with tempfile.TemporaryDirectory() as t:
            p = subprocess.run([sys.executable, str(SCRIPT), t], capture_output=True, text=True)
            self.assertEqual(p.returncode, 2)
            self.assertIn("no results", p.stderr)


if __name__ == "__main__":
    unittest.main()

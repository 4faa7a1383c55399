"""bench/lib/harness.sh, on real runs of small real programs (sh -c 'sleep ...; echo N'): each
repetition runs every case in every kind, the kinds' order rotating by one per repetition (as the
runs themselves log it); REPS repetitions; one results.tsv record per metric of each run, its
status with it; KIND/VAR=VALUE settings exported for that kind's runs only; results.json's medians
and paired differences equal to a computation of their own from the values the programs printed;
a failed run recorded and the session failed; status 77 skips the session; bench_abort stops it;
bad settings and every driver's former spelling refused with one line (the new spelling in it);
RESULTS_TAR without the traces; the drivers shellcheck-clean (when shellcheck is installed); and,
given a build, bench/nvtx/nvtx_range_cost.sh end to end.
usage: harness_test.py REPOSITORY_ROOT [BUILD_DIR]"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import unittest
from pathlib import Path

ROOT = Path(sys.argv.pop(1)).resolve()
BUILD = Path(sys.argv.pop(1)) if len(sys.argv) > 1 else None
DRIVERS = ["bench/cpu_speed_under_load.sh", "bench/recorder_sustained_rate.sh", "bench/softnic_perftest.sh",
           "bench/gda/doorbell_overhead.sh", "bench/gda/doorbell_forward.sh", "bench/nccl/nccl_tests_overhead.sh",
           "bench/nvshmem/nvshmem_perftests.sh", "bench/nvtx/nvtx_range_cost.sh", "bench/ucx_ofi/ucx_ofi_overhead.sh",
           "bench/verbs/ib_write_bw_rate.sh", "bench/verbs/placement_sensitivity.sh"]

# A driver as small as they come: each kind is a real program printing a known value per repetition.
DRIVER = r'''#!/usr/bin/env bash
set -u
. "$HARNESS"
bench_args "BUILD REPS" "$@"
bench_default KINDS "base plus/SHIFT=5 other"
bench_default REPS 6
BENCH_CASES=${CASES:-}
BENCH_KIND_PATTERNS="base plus other broken skipper aborter"
bench_run() {
  echo "$rep|$case_name|$kind_name|${SHIFT:-}" >> "$ORDER"
  mkdir -p "$run_dir/exp" && echo trace > "$run_dir/exp/trace.log"
  case $kind in
    base) bench_record value "$(sh -c "sleep 0.01; echo $((100 + 7 * rep))")" ;;
    plus) bench_record value "$(sh -c "sleep 0.02; echo $((100 + 7 * rep + rep * rep % 5 + SHIFT))")" && bench_record only_plus 1.5 ;;
    other) bench_record value "$(sh -c "echo $((90 + 7 * rep - rep % 3)).25")" ;;
    broken) echo "about to fail"; sh -c 'exit 3' ;;
    skipper) echo "SKIPPED: nothing to run on"; return 77 ;;
    aborter) bench_abort "this spoils the rest"; return 1 ;;
  esac
}
bench_main
'''


def value(kind, rep):
    """What DRIVER's kinds print."""
    return {"base": 100 + 7 * rep, "plus/SHIFT=5": 100 + 7 * rep + rep * rep % 5 + 5, "other": 90 + 7 * rep - rep % 3 + 0.25}[kind]


def rotated(kinds, rep):
    return [kinds[(j + rep - 1) % len(kinds)] for j in range(len(kinds))]


class Harness(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.t = Path(self.tmp.name)
        self.driver = self.t / "driver.sh"
        self.driver.write_text(DRIVER)

    def tearDown(self):
        self.tmp.cleanup()

    def run_driver(self, *args, **env):
        e = dict(os.environ, HARNESS=str(ROOT / "bench/lib/harness.sh"), ORDER=str(self.t / "order"), OUT=str(self.t / "out"))
        for k in ("KINDS", "REPS", "CASES", "REPEAT", "REPEATS", "MODES", "DEADLINE_S", "RESULTS_TAR"):
            e.pop(k, None)
        e.update(env)
        return subprocess.run(["bash", str(self.driver), *args], capture_output=True, text=True, env=e, timeout=120)

    def order(self):
        return [tuple(line.split("|")) for line in (self.t / "order").read_text().splitlines()]

    def records(self):
        lines = (self.t / "out/results.tsv").read_text().splitlines()
        self.assertEqual(lines[0], "run\trep\tcase\tkind\tmetric\tvalue\trc")
        return [line.split("\t") for line in lines[1:]]

    def test_rotation_repetitions_records_and_pairs(self):
        kinds = ["base", "plus/SHIFT=5", "other"]
        p = self.run_driver(CASES="c1 c2", RESULTS_TAR=str(self.t / "r.tar.gz"))
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        expected = [(str(rep), case, kind, "5" if kind.startswith("plus") else "")
                    for rep in range(1, 7) for case in ("c1", "c2") for kind in rotated(kinds, rep)]
        self.assertEqual(self.order(), expected)  # the programs' own order: rotated, 6 repetitions, settings per kind
        recs = self.records()
        runs = [(r[0], r[1], r[2], r[3]) for r in recs if r[4] == "value"]
        self.assertEqual(runs, [(str(n), rep, case, kind) for n, (rep, case, kind, _) in enumerate(expected, 1)])
        for run, rep, case, kind, metric, v, rc in recs:
            self.assertEqual(rc, "0")
            if metric == "value":
                self.assertEqual(float(v), value(kind, int(rep)))
        self.assertEqual(sum(1 for r in recs if r[4] == "only_plus"), 12)
        self.assertTrue((self.t / "out/runs/c2-plus-SHIFT-5-4/run.log").exists())
        doc = json.loads((self.t / "out/results.json").read_text())
        self.assertEqual((doc["baseline"], doc["kinds"], doc["repetitions"], doc["runs"], doc["failed"]), ("base", kinds, 6, 36, []))
        rows = {(r["case"], r["metric"], r["kind"]): r for r in doc["rows"]}
        for case in ("c1", "c2"):
            self.assertEqual(rows[(case, "value", "base")]["median"], statistics.median(value("base", r) for r in range(1, 7)))
            self.assertIsNone(rows[(case, "value", "base")]["paired"])
            for kind in kinds[1:]:
                d = sorted(value(kind, r) - value("base", r) for r in range(1, 7))
                pct = sorted(100 * (value(kind, r) - value("base", r)) / value("base", r) for r in range(1, 7))
                p6 = rows[(case, "value", kind)]["paired"]
                # 6 pairs: the interval is the smallest and the largest, 1 - 2 / 2^6 = 96.9 %
                self.assertEqual((p6["n"], p6["median"], p6["low"], p6["high"]), (6, statistics.median(d), d[0], d[-1]))
                self.assertAlmostEqual(p6["coverage"], 1 - 2 / 64)
                self.assertAlmostEqual(p6["percent"]["median"], statistics.median(pct))
                self.assertAlmostEqual(p6["percent"]["low"], pct[0])
            self.assertNotIn((case, "only_plus", "base"), rows)  # a metric of one kind only
        table = (self.t / "out/table.md").read_text()
        self.assertIn(table.strip(), p.stdout)
        self.assertIn("| c1 | value | plus/SHIFT=5 | 6 |", table)
        with tarfile.open(self.t / "r.tar.gz") as tar:
            names = tar.getnames()
        self.assertIn("./results.tsv", names)
        self.assertIn("./runs/c1-base-1/run.log", names)
        self.assertFalse([n for n in names if "/exp" in n], names)  # not the traces

    def test_a_failed_run(self):
        p = self.run_driver(KINDS="base broken", REPS="2")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        broken = [r for r in self.records() if r[3] == "broken"]
        self.assertEqual([(r[1], r[4], r[5], r[6]) for r in broken], [("1", "", "", "3"), ("2", "", "", "3")])
        self.assertIn("FAILED: status 3", p.stdout)
        self.assertIn("about to fail", (self.t / "out/runs/broken-2/run.log").read_text())
        self.assertIn("- broken: no successful run", p.stdout)

    def test_skip_and_abort(self):
        p = self.run_driver(KINDS="base skipper other")
        self.assertEqual(p.returncode, 77)
        self.assertEqual(p.stderr.strip(), "SKIPPED: driver.sh: nothing to run on")
        self.assertEqual(len(self.order()), 2)
        (self.t / "order").unlink()
        p = self.run_driver(KINDS="base aborter other", REPS="3")
        self.assertEqual(p.returncode, 1)
        self.assertEqual([o[2] for o in self.order()], ["base", "aborter"])  # nothing after it
        self.assertIn("this spoils the rest", p.stdout)
        self.assertIn("rep 1 aborter: this spoils the rest", (self.t / "out/failures.txt").read_text())

    def test_bad_settings_refused(self):
        for env, args, message in [({"KINDS": "base nope"}, (), "KINDS: 'nope' is not a kind of this benchmark"),
                                    ({"KINDS": "base plus/SHIFT"}, (), "'plus/SHIFT' is not KIND or KIND/VAR=VALUE"),
                                    ({"REPS": "0"}, (), "REPS=0: expected an integer >= 1"),
                                    ({"REPEAT": "3"}, (), "REPEAT is REPS now"),
                                    ({"MODES": "a b"}, (), "MODES is KINDS now"),
                                    ({}, ("build", "3"), f"settings are NAME=VALUE now: {self.driver} BUILD=build REPS=3"),
                                    ({}, ("-x",), "unknown option -x")]:
            p = self.run_driver(*args, **env)
            self.assertEqual((p.returncode, p.stdout), (2, ""), (env, args, p.stderr))
            self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
            self.assertTrue(p.stderr.startswith("driver.sh: ") and message in p.stderr, p.stderr)

    def test_every_driver_says_its_new_spelling(self):
        former = {
            "bench/gda/doorbell_overhead.sh": (["build-gpu", "300", "1000", "5000"], "BUILD=build-gpu REPS=300 WARMUP=1000 ITERS=5000"),
            "bench/gda/doorbell_forward.sh": (["build-gpu", "OUT"], "BUILD=build-gpu OUT=OUT"),
            "bench/nvshmem/nvshmem_perftests.sh": (["OUT"], "OUT=OUT"),
            "bench/ucx_ofi/ucx_ofi_overhead.sh": (["BUILD", "5", "off simple"], "BUILD=BUILD REPS=5 KINDS='off simple'"),
            "bench/verbs/ib_write_bw_rate.sh": (["-r", "9", "-n", "300000"], "REPS=9 ITERS=300000"),
            "bench/verbs/placement_sensitivity.sh": (["-r", "3", "-s", "OLD.cpp", "-s", "new.cpp", "-f", "", "-f", "-falign-functions=64"],
                                                     "REPS=3 SOURCES='OLD.cpp new.cpp' FLAGSETS='|-falign-functions=64'"),
            "bench/nvtx/nvtx_range_cost.sh": (["build", "11", "100000"], "BUILD=build REPS=11 RANGES=100000"),
            "bench/softnic_perftest.sh": (["build/softnic"], "LIBDIR=build/softnic"),
            "bench/recorder_sustained_rate.sh": (["build", "1", "1 2 4 8", "lz4 zstd none", "6", "1"],
                                                 "BUILD=build RUN_SECONDS=1 THREADS='1 2 4 8' KINDS='lz4 zstd none' STEPS=6 WRITERS=1"),
            "bench/cpu_speed_under_load.sh": (["build", "3", "2"], "BUILD=build REPS=3 CPU=2"),
        }
        self.assertLessEqual(set(former), set(DRIVERS))  # drivers newer than the NAME=VALUE settings have no former spelling
        env = {k: v for k, v in os.environ.items() if k not in ("REPEAT", "REPEATS", "MODES")}
        for driver, (args, spelling) in former.items():
            path = ROOT / driver
            p = subprocess.run(["bash", str(path), *args], capture_output=True, text=True, env=env, timeout=60)
            self.assertEqual((p.returncode, p.stdout), (2, ""), (driver, p.stderr))
            self.assertEqual(p.stderr, f"{path.name}: settings are NAME=VALUE now: {path} {spelling}\n")

    @unittest.skipUnless(shutil.which("shellcheck"), "shellcheck is not installed")
    def test_shellcheck_clean(self):
        p = subprocess.run(["shellcheck", "-x", "bench/lib/harness.sh", *DRIVERS], cwd=ROOT, capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    @unittest.skipUnless(BUILD and (BUILD / "tests/bin/verbs_probe_nvtx").exists() and (BUILD / "bin/sigmatrace").exists(),
                         "no verbs_probe_nvtx or sigmatrace built")
    def test_nvtx_range_cost_end_to_end(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith("SIGMATRACE_") and k not in ("KINDS", "REPS", "REPEAT", "MODES")}
        p = subprocess.run(["bash", str(ROOT / "bench/nvtx/nvtx_range_cost.sh"), f"BUILD={BUILD}", f"OUT={self.t / 'nvtx'}", "REPS=2",
                            "RANGES=2000"], capture_output=True, text=True, env=env, timeout=300)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        doc = json.loads((self.t / "nvtx/results.json").read_text())
        self.assertEqual([(r["kind"], r["metric"], r["n"]) for r in doc["rows"]], [("untraced", "ns_per_range", 2), ("traced", "ns_per_range", 2)])
        self.assertTrue(all(r["median"] > 0 for r in doc["rows"]))
        self.assertEqual(doc["rows"][1]["paired"]["n"], 2)
        self.assertIn("| ns_per_range | traced | 2 |", p.stdout)


if __name__ == "__main__":
    unittest.main()

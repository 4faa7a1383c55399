"""bench/gda/softnic_stages.py, on a run's pair.log as doorbell_overhead.sh leaves it: the stage means
weighted by count over its QPs and processes, printed as the metrics doorbell_overhead.sh records
(the harness's table pairs them: bench_table_test.py), a stage without a count left out, no stage
times said by status 1; and, given softnic's devx test program, that every stage line softnic
really prints is read, with the QPs it printed them for.
usage: softnic_stages_test.py REPOSITORY_ROOT [GDA_DEVX_HOST_TEST]"""
import os
import re
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(sys.argv.pop(1))
DEVX_TEST = sys.argv.pop(1) if len(sys.argv) > 1 else None
SCRIPT = ROOT / "bench" / "gda" / "softnic_stages.py"
sys.path.insert(0, str(SCRIPT.parent))
from softnic_stages import stage_means  # noqa: E402


def stage_line(name, n, mean, longest):
    """A line as softnic prints it (devx_debug.cpp, stage_line)."""
    return f"    {name:<34} {n:>10}  mean {mean:9.2f} us  max {longest:9.2f} us"


def pair_log(path, read_means, sq_read=0.5):
    """One run's pair.log: two processes, each with a QP's stages and the process's GPU reads."""
    lines = []
    for pe, read in enumerate(read_means):
        lines += [f"--- pe {pe} (rc 0)",
                  f"softnic devx [pid {100 + pe}] qp 0x1{pe}: 10 doorbells (0 from its record), 10 WQEs, 0 stale slot reads, "
                  "0 stray completions; stage times:",
                  stage_line("SQ read (doorbell seen -> WQEs)", 10, sq_read, 3.0),
                  stage_line("CQE write", 0, 0, 0),  # a stage that never happened
                  f"softnic devx [pid {100 + pe}] engine and GPU copies:",
                  stage_line("GPU read (device -> host)", 1000 * (pe + 1), read, 50.0)]
    path.write_text("\n".join(lines) + "\n")


def run(log):
    return subprocess.run([sys.executable, str(SCRIPT), str(log)], capture_output=True, text=True)


class SoftnicStages(unittest.TestCase):
    def test_weighted_means_as_metrics(self):
        with tempfile.TemporaryDirectory() as t:
            log = Path(t) / "pair.log"
            # pe 1 has twice pe 0's reads: the run's mean is (m0 + 2 m1) / 3
            pair_log(log, (3.0, 4.5), sq_read=0.7)
            r = run(log)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertEqual(r.stdout.splitlines(), ["SQ read (doorbell seen -> WQEs)\t0.7000",  # the stages' first order
                                                     "GPU read (device -> host)\t4.0000"])  # no count: CQE write left out

    def test_no_stage_times_fails(self):
        with tempfile.TemporaryDirectory() as t:
            log = Path(t) / "pair.log"
            log.write_text("--- pe 0 (rc 0)\nno statistics here\n")
            for path in (log, Path(t) / "missing.log"):
                r = run(path)
                self.assertEqual(r.returncode, 1)
                self.assertEqual(r.stdout, "")

    @unittest.skipUnless(DEVX_TEST, "softnic's devx test program not built")
    def test_reads_what_softnic_prints(self):
        env = dict(os.environ, SOFTNIC_DEVX_STATS="1")
        p = subprocess.run([DEVX_TEST, "--gtest_filter=DevxHost.GdaDeviceCodeRunsPutGetFetchAddBarrierAndPingPongOnCpuThreads"],
                           capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        text = p.stderr
        printed = [l for l in text.splitlines() if " mean " in l and l.rstrip().endswith(" us")]
        self.assertTrue(printed, text)
        means = stage_means(text)
        self.assertEqual(set(means), {re.match(r" {4}(\S.*?)\s{2,}", l)[1] for l in printed})
        for stage in ("SQ read (doorbell seen -> WQEs)", "post -> transport completion", "CQE write", "engine round gap while spinning"):
            self.assertIn(stage, means)
        # One SQ-read line under each QP's header, each with reads counted.
        qps = re.findall(r"qp 0x[0-9a-f]+: \d+ doorbells .*; stage times:$", text, re.M)
        sq_reads = re.findall(r"^ {4}SQ read \(doorbell seen -> WQEs\)\s+(\d+)", text, re.M)
        self.assertGreater(len(qps), 0, text)
        self.assertEqual(len(sq_reads), len(qps))
        self.assertTrue(all(int(n) > 0 for n in sq_reads))


if __name__ == "__main__":
    unittest.main()

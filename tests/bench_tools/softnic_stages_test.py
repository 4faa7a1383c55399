"""bench/gda/softnic_stages.py, on runs filed the way doorbell_overhead.sh leaves them (RAW/KIND-REP/
pair.log): each run's stage means weighted by count over its QPs and processes, the median over the
runs per kind, the paired differences to the first kind (the median and its 95 % interval: for 10
pairs the 2nd and 9th), a run without stage times left out, no stage times at all said and failed;
and, given softnic's devx test program, that every stage line softnic really prints is read, with
the QPs it printed them for.
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


def write_run(raw, tag, rep, read_means, sq_read=0.5):
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
    d = raw / f"{tag}-{rep}"
    d.mkdir()
    (d / "pair.log").write_text("\n".join(lines) + "\n")


def run(raw, *kinds):
    return subprocess.run([sys.executable, str(SCRIPT), str(raw), *kinds], capture_output=True, text=True)


def rows(text, stage):
    """{kind: (runs, median, paired difference, interval)} of one stage's block."""
    lines = text.splitlines()
    block = lines[lines.index(f"  {stage}:") + 1:]
    out = {}
    for line in block:
        m = re.fullmatch(r"    (\S+)\s+(\d+) runs\s+(\S+)(?:  paired (\S+) (\[[^]]*\]|\(too few runs for 95 %\)))?", line)
        if not m:
            break
        out[m[1]] = int(m[2]), float(m[3]), m[4], m[5]
    return out


class SoftnicStages(unittest.TestCase):
    def test_weighted_means_medians_and_pairs(self):
        with tempfile.TemporaryDirectory() as t:
            raw = Path(t)
            for rep in range(1, 11):
                # pe 1 has twice pe 0's reads: the run's mean is (m0 + 2 m1) / 3
                write_run(raw, "untraced", rep, (3.0, 3.0))
                write_run(raw, "forward", rep, (3.0, 3.0 + rep * 0.15))  # +0.1 .. +1.0
                if rep != 4:
                    write_run(raw, "forward-SIGMATRACE_KERNEL_MARKERS-0", rep, (3.0, 3.0), sq_read=0.5 + rep / 10)
            (raw / "forward-SIGMATRACE_KERNEL_MARKERS-0-4").mkdir()  # a failed run: no pair.log
            r = run(raw, "untraced", "forward", "forward/SIGMATRACE_KERNEL_MARKERS=0")
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("10 repetitions", r.stdout)
            self.assertNotIn("CQE write", r.stdout)  # no count: not a stage of these runs
            reads = rows(r.stdout, "GPU read (device -> host)")
            self.assertEqual(reads["untraced"], (10, 3.0, None, None))
            # differences 0.1 .. 1.0: the median (0.5 + 0.6) / 2, the interval the 2nd and 9th
            self.assertEqual(reads["forward"], (10, 3.55, "+0.550", "[+0.200, +0.900]"))
            self.assertEqual(reads["forward/SIGMATRACE_KERNEL_MARKERS=0"], (9, 3.0, "+0.000", "[+0.000, +0.000]"))
            sq = rows(r.stdout, "SQ read (doorbell seen -> WQEs)")
            # 0.6 .. 1.5 without 0.9: the 5th of nine is 1.1; the differences 0.1 .. 1.0 without 0.4
            self.assertEqual(sq["forward/SIGMATRACE_KERNEL_MARKERS=0"][:3], (9, 1.1, "+0.600"))

    def test_no_stage_times_fails(self):
        with tempfile.TemporaryDirectory() as t:
            raw = Path(t)
            (raw / "untraced-1").mkdir()
            (raw / "untraced-1" / "pair.log").write_text("--- pe 0 (rc 0)\nno statistics here\n")
            r = run(raw, "untraced")
            self.assertEqual(r.returncode, 1)
            self.assertIn("SOFTNIC_DEVX_STATS=1 not set?", r.stdout)

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

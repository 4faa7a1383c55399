"""bench/gda/forward_checks.py, on runs filed as the harness files doorbell_forward.sh's (records in
OUT/results.tsv, files in OUT/runs/RUN): a traced run passes when its trace holds every doorbell its GPU
rang (exactly with one in flight; with bursts, at least one per burst and no more than rung) and,
with markers on, its kernel's end; a run without results or without its info fails; untraced
kinds are not checked. With the profiler and the CPU doorbell client (a CPU thread ringing
softnic's doorbells through the stand-in libcuda), also on `sigmatrace info --json` of a real
experiment: 20 doorbells and the kernel's end recorded, found as such.
usage: forward_checks_test.py REPOSITORY_ROOT [BUILD_DIR]"""
import json
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(sys.argv.pop(1))
BUILD = Path(sys.argv.pop(1)) if len(sys.argv) > 1 else None
SCRIPT = ROOT / "bench" / "gda" / "forward_checks.py"


def info(doorbells, ends=0, processes=1):
    """`sigmatrace info --json` as it prints it: per process, its events by type."""
    ps = [{"events_by_type": {"gpu_doorbell": doorbells // processes, "cuda_launch": 1}} for _ in range(processes)]
    if ends:
        ps[0]["events_by_type"]["cuda_kernel_seen_end"] = ends
    return {"dir": "x", "skipped": [], "processes": ps}


def write_run(out, kind, rep, rung, burst=1, recorded=None, ends=1, result=True, info_text=None):
    """One run as doorbell_forward.sh leaves it through the harness: its records in results.tsv, its
    files in OUT/runs/bBURST_d0_r0-KINDTAG-REP."""
    case = f"b{burst}_d0_r0"
    d = out / "runs" / f"{case}-{kind.replace('/', '-').replace('=', '-')}-{rep}"
    d.mkdir(parents=True)
    (d / "run.log").write_text("doorbell round trip ...\n")
    results = out / "results.tsv"
    if not results.exists():
        results.write_text("run\trep\tcase\tkind\tmetric\tvalue\trc\n")
    with results.open("a") as f:
        f.write(f"1\t{rep}\t{case}\t{kind}\t{'median_us' if result else ''}\t{'1.9' if result else ''}\t{0 if result else 1}\n")
    if result:
        (d / "result.json").write_text(json.dumps({"burst": burst, "rounds": rung // burst, "doorbells": rung, "median_us": 1.9, "p99_us": 2.0}))
    if info_text is None and kind != "untraced":
        info_text = json.dumps(info(rung if recorded is None else recorded, ends))
    if info_text is not None:
        (d / "result.json.info").write_text(info_text)


def run(out, *kinds):
    return subprocess.run([sys.executable, str(SCRIPT), str(out), *kinds], capture_output=True, text=True)


class ForwardChecks(unittest.TestCase):
    def test_every_doorbell_and_the_kernel_end(self):
        with tempfile.TemporaryDirectory() as t:
            out = Path(t)
            for rep in (1, 2, 3):
                write_run(out, "untraced", rep, 22000, info_text="")
                write_run(out, "forward", rep, 22000)
                write_run(out, "forward/SIGMATRACE_KERNEL_MARKERS=0", rep, 22000, ends=0)
                write_run(out, "forward", rep, 176000, burst=8, recorded=150000)  # stores overwritten: fine
            r = run(out, "untraced", "forward", "forward/SIGMATRACE_KERNEL_MARKERS=0")
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertEqual(r.stdout.splitlines(), [
                "checks forward: 6 of 6 runs recorded every doorbell rung and the kernel's end",
                "checks forward/SIGMATRACE_KERNEL_MARKERS=0: 3 of 3 runs recorded every doorbell rung"])

    def test_each_failure_named(self):
        with tempfile.TemporaryDirectory() as t:
            out = Path(t)
            write_run(out, "forward", 1, 22000)
            write_run(out, "forward", 2, 22000, recorded=21999)
            write_run(out, "forward", 3, 22000, ends=0)
            write_run(out, "forward", 4, 22000, result=False)
            write_run(out, "forward", 5, 22000, info_text="sigmatrace: cannot read ...")
            write_run(out, "forward", 6, 176000, burst=8, recorded=21999)
            write_run(out, "forward", 7, 176000, burst=8, recorded=176001)
            r = run(out, "forward")
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            self.assertEqual(r.stdout.splitlines(), [
                "checks forward: 1 of 7 runs recorded every doorbell rung and the kernel's end",
                "  b1_d0_r0-forward-2: 21999 doorbells recorded of 22000 rung",
                "  b1_d0_r0-forward-3: 0 kernel ends recorded of 1",
                "  b1_d0_r0-forward-4: no result (the run failed)",
                "  b1_d0_r0-forward-5: no readable `sigmatrace info --json`",
                "  b8_d0_r0-forward-6: 21999 doorbells recorded of 176000 rung in bursts of 8 (at least 22000)",
                "  b8_d0_r0-forward-7: 176001 doorbells recorded of 176000 rung in bursts of 8 (at least 22000)"])

    def test_a_kind_without_runs_fails(self):
        with tempfile.TemporaryDirectory() as t:
            r = run(Path(t), "untraced", "forward")
            self.assertEqual(r.returncode, 1)
            self.assertEqual(r.stdout.splitlines(), ["checks forward: 0 of 0 runs recorded every doorbell rung and the kernel's end"])

    @unittest.skipUnless(BUILD and (BUILD / "tests" / "bin" / "doorbell_client").exists(), "no doorbell client built")
    def test_real_experiment(self):
        st, client = BUILD / "bin" / "sigmatrace", BUILD / "tests" / "bin" / "doorbell_client"
        env = dict(os.environ, LD_LIBRARY_PATH=str(BUILD / "tests" / "fake_cuda"), SOFTNIC_FABRIC=f"forward-checks-{os.getpid()}")
        for k in [k for k in env if k.startswith("SIGMATRACE_")]:
            del env[k]
        with tempfile.TemporaryDirectory() as t:
            out, exp = Path(t) / "out", Path(t) / "exp"
            out.mkdir()
            # --marked: the client's kernel runs on a stream of its own, so its end is marked.
            p = subprocess.run([str(st), "profile", "--softnic", "--mode", "simple", "-o", str(exp), "--", str(client), "--qps", "1",
                                "--ops", "20", "--marked"], env=env, capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            real = subprocess.run([str(st), "info", "--json", str(exp)], capture_output=True, text=True, check=True).stdout
            write_run(out, "forward", 1, 20, info_text=real)
            write_run(out, "forward", 2, 21, info_text=real)
            r = run(out, "forward")
            self.assertEqual(r.stdout.splitlines(), [
                "checks forward: 1 of 2 runs recorded every doorbell rung and the kernel's end",
                "  b1_d0_r0-forward-2: 20 doorbells recorded of 21 rung"], r.stdout + r.stderr)


if __name__ == "__main__":
    unittest.main()

"""bench/gda/forward_table.py, on results written the way doorbell_forward.sh leaves them: per
burst, NIC delay and NIC read, the medians over the runs and each mode's paired difference to the first
mode (the median of the differences and its 95 % interval: for 10 pairs the 2nd and 9th), the
NIC's reads (with --nic-read) under each mode's row with their own paired differences, a failed
run (no JSON) left out of the pairs, a mode without any run said and failed.
usage: forward_table_test.py REPOSITORY_ROOT"""
import json
import re
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

SCRIPT = Path(sys.argv.pop(1)) / "bench" / "gda" / "forward_table.py"


def write_run(out, tag, burst, read, rep, median, p99, delay=0, read_us=None):
    r = {"burst": burst, "nic_delay_us": delay, "nic_read": read, "rounds": 100, "median_us": median, "p99_us": p99}
    if read_us is not None:  # the NIC's reads: median, p99
        r.update(nic_reads=100, nic_read_median_us=read_us[0], nic_read_p99_us=read_us[1])
    (out / f"{tag}_b{burst}_d{delay}_r{read}_{rep}.json").write_text(json.dumps(r) + "\n")


def run(out, *modes, ok=True):
    r = subprocess.run([sys.executable, str(SCRIPT), str(out), *modes], capture_output=True, text=True)
    if ok:
        assert r.returncode == 0, r.stdout + r.stderr
    return r


def section(text, title):
    """The lines of one burst/read section."""
    rest = text.splitlines()[text.splitlines().index(title) + 1:]
    end = next((k for k, l in enumerate(rest) if not l.startswith("  ")), len(rest))
    return rest[:end]


def added(text):
    """{stat: (difference, interval)} of a row's "added:" part."""
    return {k: (d, i) for k, d, i in re.findall(r" (median|p99) (\S+) (\[[^]]*\]|\(too few runs for 95 %\))", text or "")}


def row(line):
    """A mode's row: (mode, runs, median, p99, {stat: (difference, interval)})."""
    m = re.fullmatch(r"  (\S+)\s+(\d+) runs  median\s+(\S+) us  p99\s+(\S+) us(?:  added:(.*))?", line)
    assert m, line
    return m[1], int(m[2]), float(m[3]), float(m[4]), added(m[5])


def rows(lines):
    """The mode rows of a section, and the NIC-read rows (indented further) by the mode above."""
    modes, reads = [], {}
    for line in lines:
        m = re.fullmatch(r"\s{3,}NIC read median\s+(\S+) us  p99\s+(\S+) us(?:  added:(.*))?", line)
        if m:
            reads[modes[-1][0]] = float(m[1]), float(m[2]), added(m[3])
        else:
            modes.append(row(line))
    return modes, reads


class ForwardTable(unittest.TestCase):
    def test_paired_differences_per_burst_and_read(self):
        with tempfile.TemporaryDirectory() as t:
            out = Path(t)
            for rep in range(1, 11):
                base = 1.5 + rep / 100  # the untraced run moves; its pair moves with it
                write_run(out, "untraced", 1, 0, rep, base, base + 0.5)
                write_run(out, "forward", 1, 0, rep, base + rep / 10, base + 0.5)  # +0.1 .. +1.0
                write_run(out, "forward-SIGMATRACE_KERNEL_MARKERS-0", 1, 0, rep, base, base + 0.5 - rep / 10)
                write_run(out, "untraced", 1, 64, rep, 3.0, 4.0, read_us=(1.0, 2.0))
                if rep != 4:  # this repetition's traced run failed
                    write_run(out, "forward", 1, 64, rep, 3.0 + rep, 4.0, read_us=(1.0 + rep / 10, 2.0 + rep))
                write_run(out, "forward-SIGMATRACE_KERNEL_MARKERS-0", 1, 64, rep, 3.0, 4.0, read_us=(1.0, 2.0))
            (out / "forward_b1_d0_r64_4.json.log").write_text("FAILED\n")
            text = run(out, "untraced", "forward", "forward/SIGMATRACE_KERNEL_MARKERS=0").stdout
            s0, reads0 = rows(section(text, "burst 1, NIC delay 0 us, NIC read 0 B:"))
            self.assertEqual(reads0, {})  # no NIC reads: no such row
            self.assertEqual([r[:2] for r in s0], [("untraced", 10), ("forward", 10), ("forward/SIGMATRACE_KERNEL_MARKERS=0", 10)])
            self.assertEqual(s0[0][4], {})
            # differences 0.1 .. 1.0: the median (0.5 + 0.6) / 2, the interval the 2nd and 9th
            self.assertEqual(s0[1][4], {"median": ("+0.550", "[+0.200, +0.900]"), "p99": ("+0.000", "[+0.000, +0.000]")})
            self.assertEqual(s0[2][4]["p99"], ("-0.550", "[-0.900, -0.200]"))
            s64, reads64 = rows(section(text, "burst 1, NIC delay 0 us, NIC read 64 B:"))
            self.assertEqual(s64[1][1], 9)  # the failed repetition is not a run
            self.assertEqual(s64[1][2], 9.0)  # 1 2 3 5 6 7 8 9 10 (+3): the 5th
            self.assertEqual(s64[1][4]["median"], ("+6.000", "[+2.000, +9.000]"))
            self.assertEqual(reads64["untraced"], (1.0, 2.0, {}))
            # the reads of the 9 runs: medians 1.1 .. 2.0 without 1.4 (the 5th: 1.6), p99s 3 .. 12 without 6 (8)
            self.assertEqual(reads64["forward"], (1.6, 8.0, {"median": ("+0.600", "[+0.200, +0.900]"), "p99": ("+6.000", "[+2.000, +9.000]")}))
            self.assertEqual(reads64["forward/SIGMATRACE_KERNEL_MARKERS=0"][2]["median"], ("+0.000", "[+0.000, +0.000]"))

    def test_a_mode_without_runs_fails(self):
        with tempfile.TemporaryDirectory() as t:
            out = Path(t)
            for rep in range(1, 4):
                write_run(out, "untraced", 8, 0, rep, 5.0, 6.0, delay=20)
            r = run(out, "untraced", "forward", ok=False)
            self.assertEqual(r.returncode, 1)
            self.assertIn("forward: no run", r.stdout)
            for rep in range(1, 4):
                write_run(out, "forward", 8, 0, rep, 5.5, 6.0, delay=20)
            r = rows(section(run(out, "untraced", "forward").stdout, "burst 8, NIC delay 20 us, NIC read 0 B:"))[0][1]
            self.assertEqual(r[4]["median"], ("+0.500", "(too few runs for 95 %)"))


if __name__ == "__main__":
    unittest.main()

#!/usr/bin/env python3
"""Checks that tracing left NVSHMEM's perftests' output as it was: every traced run of
nvshmem_perftests.sh (OUT/runs/<test>-<mode>-<rep>/pe<N>.log) must print, line for line, what the
untraced run of the same test and repetition printed, numbers aside (latencies, pids and
addresses differ from run to run). Prints one line per difference and a summary; exit 1 on any
difference, 2 when there is nothing to compare."""
import os
import re
import sys

NUMBER = re.compile(r"(0x)?[0-9a-fA-F]*[0-9][0-9a-fA-F]*(\.[0-9]+)?")


def shape(path):
    with open(path, errors="replace") as f:
        return [NUMBER.sub("N", line.rstrip("\n")) for line in f]


def main(out):
    runs = os.path.join(out, "runs")
    if not os.path.isdir(runs):
        print(f"output_unchanged: no runs directory in {out}")
        return 2
    compared, differing = 0, 0
    for name in sorted(os.listdir(runs)):
        parts = name.rsplit("-", 2)
        path = os.path.join(runs, name)
        if len(parts) != 3 or parts[1] == "untraced" or not os.path.isdir(path):
            continue
        test, mode, rep = parts
        base = os.path.join(runs, f"{test}-untraced-{rep}")
        if not os.path.isdir(base):
            continue
        for log in sorted(f for f in os.listdir(base) if re.fullmatch(r"pe[0-9]+\.log", f)):
            traced = os.path.join(path, log)
            compared += 1
            if not os.path.exists(traced):
                differing += 1
                print(f"{test} {mode} rep {rep} {log}: missing")
                continue
            a, b = shape(os.path.join(base, log)), shape(traced)
            if a != b:
                differing += 1
                k = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))
                first = b[k] if k < len(b) else "(ends)"
                print(f"{test} {mode} rep {rep} {log}: line {k + 1} differs from untraced: {first!r}")
    if compared == 0:
        print("output_unchanged: no traced run with an untraced run of the same repetition")
        return 2
    print(f"output unchanged by tracing: {compared - differing} of {compared} traced PE logs print what the untraced "
          "run of their repetition printed (numbers aside)")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))

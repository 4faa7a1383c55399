"""doorbell_forward.sh's table: per burst, NIC delay and NIC read, each mode's median over the runs
of each run's median and p99 round trip, and its paired difference to the first mode (each
repetition's run minus that mode's run of the same repetition: the median and its 95 % interval,
pairing.py).
usage: forward_table.py OUT MODE... (the first mode is the baseline, normally untraced)"""
import json
import statistics
import sys
from pathlib import Path

from pairing import FORWARD_RUN, kind_tag, paired_text

out, modes = Path(sys.argv[1]), sys.argv[2:]
runs = {}  # (mode tag, burst, delay, read) -> {rep: result}
for f in out.glob("*.json"):
    m = FORWARD_RUN.fullmatch(f.name)
    if not m:
        continue
    try:
        r = json.loads(f.read_text())
    except ValueError:
        continue  # a failed run: doorbell_forward.sh said so
    runs.setdefault((m[1], int(m[2]), int(m[3]), int(m[4])), {})[int(m[5])] = r
tags = [kind_tag(m) for m in modes]


def median_of(rs, stat):
    """The median over the runs of one statistic of each run."""
    return statistics.median(r[stat] for r in rs.values() if stat in r)


def added(rs, base, stats):
    """Each statistic's paired difference to the baseline's run of the same repetition: its median
    and 95 % interval."""
    text = ""
    for stat in stats:
        d = [rs[k][stat] - base[k][stat] for k in rs if k in base and stat in rs[k] and stat in base[k]]
        if d:
            text += f" {stat.removeprefix('nic_read_')[:-3]} {paired_text(d)}"
    return text

failed = False
for burst, delay, read in sorted({k[1:] for k in runs}):
    print(f"burst {burst}, NIC delay {delay} us, NIC read {read} B:")
    base = runs.get((tags[0], burst, delay, read), {})
    for mode, tag in zip(modes, tags):
        rs = runs.get((tag, burst, delay, read), {})
        if not rs:
            print(f"  {mode}: no run")
            failed = True
            continue
        line = f"  {mode:<40} {len(rs):>3} runs  median {median_of(rs, 'median_us'):7.3f} us  p99 {median_of(rs, 'p99_us'):7.3f} us"
        if tag != tags[0]:
            line += "  added:" + added(rs, base, ("median_us", "p99_us"))
        print(line)
        # With --nic-read: how long the NIC's reads took (a read that waits for a poller's driver
        # call shows it here).
        if any("nic_read_median_us" in r for r in rs.values()):
            line = (f"  {'':<40} NIC read median {median_of(rs, 'nic_read_median_us'):7.3f} us"
                    f"  p99 {median_of(rs, 'nic_read_p99_us'):7.3f} us")
            if tag != tags[0]:
                line += "  added:" + added(rs, base, ("nic_read_median_us", "nic_read_p99_us"))
            print(line)
sys.exit(1 if failed else 0)

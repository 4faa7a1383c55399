#!/usr/bin/python3
"""Reads an experiment's OTF2 archive (analyze --otf2) back with OTF2's Python bindings and holds it
against the experiment's trace.sqlite: every operation there exactly once, as the record its kind
makes (RmaPut, RmaGet, RmaAtomic; MpiIsend; MpiIrecvRequest), with its bytes, its peer as the remote
rank and its post time; every completion traced as the matching completion record at the op's
ts + dur (MpiIrecv carrying the sender and the bytes); every NVTX push range and every NCCL call's
network part as an Enter and a Leave; per location, times in order and regions nested.
usage: check_otf2.py EXPERIMENT   (Debian's python3-otf2: run with /usr/bin/python3)"""
import sqlite3
import sys
from collections import Counter, defaultdict

import otf2

RMA = {"READ": "RmaGet", "ATOMIC_CS": "RmaAtomic", "ATOMIC_FA": "RmaAtomic"}
MESSAGE = {"SEND", "SEND_IMM", "WRITE_IMM", "SEND_INV"}


def expected(db):
    posts, completions = {}, {}
    for op_id, ts, dur, opcode, nbytes, peer in db.execute("SELECT op_id, ts_ns, dur_ns, opcode, bytes, peer_process_id FROM op"):
        peer = 0xFFFFFFFF if peer is None else peer
        kind = "MpiIrecvRequest" if opcode == "RECV" else "MpiIsend" if opcode in MESSAGE else RMA.get(opcode, "RmaPut")
        posts[op_id] = (kind, ts, None if kind == "MpiIrecvRequest" else nbytes, None if kind == "MpiIrecvRequest" else peer)
        if dur is not None:
            done = {"MpiIrecvRequest": "MpiIrecv", "MpiIsend": "MpiIsendComplete"}.get(kind, "RmaOpCompleteNonBlocking")
            completions[op_id] = (done, ts + dur, nbytes if done == "MpiIrecv" else None, peer if done == "MpiIrecv" else None)
    ranges = db.execute("SELECT count(*) FROM range WHERE kind = 'push' AND thread_id IS NOT NULL").fetchone()[0]
    calls = db.execute("SELECT count(*) FROM nccl_task WHERE net_start_ns IS NOT NULL").fetchone()[0]
    return posts, completions, ranges, calls


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    exp = sys.argv[1]
    db = sqlite3.connect(f"file:{exp}/trace.sqlite?mode=ro", uri=True)
    want_posts, want_done, want_ranges, want_calls = expected(db)
    posts, done, problems = {}, {}, []
    enters = Counter()
    last_time, stacks = {}, defaultdict(list)
    with otf2.reader.open(f"{exp}/otf2/traces.otf2") as trace:
        for loc, ev in trace.events:
            name = type(ev).__name__
            if ev.time < last_time.get(loc.name + loc.group.name, 0):
                problems.append(f"{loc.name} of {loc.group.name}: {name} at {ev.time} before the previous event")
            last_time[loc.name + loc.group.name] = ev.time
            if name in ("RmaPut", "RmaGet", "RmaAtomic"):
                got = (name, ev.time, ev.bytes_sent if name == "RmaAtomic" else ev.bytes, ev.remote)
                key = ev.matching_id
            elif name == "MpiIsend":
                got, key = (name, ev.time, ev.msg_length, ev.receiver), ev.request_id
            elif name == "MpiIrecvRequest":
                got, key = (name, ev.time, None, None), ev.request_id
            elif name in ("RmaOpCompleteNonBlocking", "MpiIsendComplete"):
                done[ev.matching_id if name.startswith("Rma") else ev.request_id] = (name, ev.time, None, None)
                continue
            elif name == "MpiIrecv":
                done[ev.request_id] = (name, ev.time, ev.msg_length, ev.sender)
                continue
            elif name == "Enter":
                enters["NCCL" if loc.name.startswith("NCCL calls") else "NVTX"] += 1
                stacks[id(loc)].append(ev.region)
                continue
            elif name == "Leave":
                if not stacks[id(loc)] or stacks[id(loc)].pop() != ev.region:
                    problems.append(f"{loc.name}: Leave of {ev.region.name} not the innermost region entered")
                continue
            else:
                problems.append(f"unexpected record {name}")
                continue
            if key in posts:
                problems.append(f"operation {key} recorded twice")
            posts[key] = got
    for what, got, want in (("posts", posts, want_posts), ("completions", done, want_done)):
        missing, extra = want.keys() - got.keys(), got.keys() - want.keys()
        wrong = [k for k in want.keys() & got.keys() if got[k] != want[k]]
        if missing or extra or wrong:
            problems.append(f"{what}: {len(missing)} of trace.sqlite's missing, {len(extra)} not in it, {len(wrong)} differ"
                            + (f" (first: {got[wrong[0]]} instead of {want[wrong[0]]})" if wrong else ""))
    if enters["NVTX"] != want_ranges or enters["NCCL"] != want_calls:
        problems.append(f"regions: {enters['NVTX']} NVTX ranges and {enters['NCCL']} NCCL calls entered, trace.sqlite has {want_ranges} and {want_calls}")
    if any(stacks.values()):
        problems.append("regions left open at the end")
    for p in problems:
        print("FAIL:", p)
    print(f"{len(posts)} operations ({Counter(v[0] for v in posts.values())}), {len(done)} completions, "
          f"{enters['NVTX']} NVTX ranges, {enters['NCCL']} NCCL calls: {'as in' if not problems else 'NOT as in'} trace.sqlite")
    return 1 if problems else 0


sys.exit(main())

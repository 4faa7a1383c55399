#!/usr/bin/env python3
"""Checks the DOM a browser rendered from report.html against the experiment's aggregate.json.

Fails (exit 1, one line per problem) when the browser logged any console message, a figure has
no drawn SVG, a number the page shows differs from aggregate.json, the traffic differs from what
the program was known to make (--ops-per-pair/--bytes-per-op: the perftest pairs of
report_in_browser_test.sh; --gpu-wqes: the WQEs softnic executed for a GPU-initiated run), or a
figure's SVG/PNG file is missing or malformed, or (--diff) the changes from a baseline shown are
not the diff's.
"""
import argparse
import collections
import json
import os
import re
import struct
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

NUMBER = re.compile(r"^\d{1,3}(,\d{3})*$")
NOT_TRAFFIC = {"RECV", "LOCAL_INV", "BIND_MW", "UNKNOWN", "NOP"}  # classes the matrices do not count


class Dom(HTMLParser):
    """Figures (their SVG marks and text), tables (their cells) and the report root's attributes."""

    def __init__(self):
        super().__init__()
        self.figures = collections.OrderedDict()  # id -> {"svgs", "paths", "texts", "caption"}
        self.tables = {}  # data-table -> rows of [(text, data-value)]
        self.root = {}
        self.stack = []  # (tag, figure id or None, table key or None, in caption)
        self.text_target = None
        self.cell = None

    def current(self, index):
        for entry in reversed(self.stack):
            if entry[index] is not None:
                return entry[index]
        return None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        fig = a.get("data-figure") if tag == "section" else None
        table = a.get("data-table") if tag == "table" else None
        if tag == "div" and a.get("id") == "report":
            self.root = a
        if fig:
            self.figures[fig] = {"svgs": 0, "paths": 0, "texts": [], "caption": ""}
        if table:
            self.tables[table] = []
        caption = tag == "p" and "caption" in (a.get("class") or "")
        self.stack.append((tag, fig, table, caption or None))
        f = self.current(1)
        if f:
            if tag == "svg":
                self.figures[f]["svgs"] += 1
            if tag == "path" and a.get("d"):
                self.figures[f]["paths"] += 1
            if tag == "text":
                self.text_target = []
        t = self.current(2)
        if t and tag == "tr":
            self.tables[t].append([])
        if t and tag in ("td", "th"):
            self.cell = ([], a.get("data-value"))

    def handle_endtag(self, tag):
        f, t = self.current(1), self.current(2)
        if tag == "text" and self.text_target is not None and f:
            self.figures[f]["texts"].append("".join(self.text_target).strip())
            self.text_target = None
        if tag in ("td", "th") and self.cell is not None and t:
            self.tables[t][-1].append(("".join(self.cell[0]).strip(), self.cell[1]))
            self.cell = None
        while self.stack:
            if self.stack.pop()[0] == tag:
                break

    def handle_data(self, data):
        if self.text_target is not None:
            self.text_target.append(data)
        if self.cell is not None:
            self.cell[0].append(data)
        if self.current(3) and self.current(1):
            self.figures[self.current(1)]["caption"] += data


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--aggregate", required=True)
    ap.add_argument("--dom", required=True)
    ap.add_argument("--console", required=True)
    ap.add_argument("--plots", required=True)
    ap.add_argument("--ops-per-pair", type=int)
    ap.add_argument("--bytes-per-op", type=int)
    ap.add_argument("--gpu-wqes", type=int)
    ap.add_argument("--diff", help="`sigmatrace diff --json` of the page's baseline and experiment (report --baseline)")
    ap.add_argument("--case-study", choices=["moe", "bfs"], help="the figures a case study needs must be there")
    o = ap.parse_args()
    agg = json.load(open(o.aggregate))
    dom = Dom()
    dom.feed(open(o.dom, encoding="utf-8").read())
    problems = []

    def expect(what, got, want):
        if got != want:
            problems.append(f"{what}: the page shows {got!r}, expected {want!r}")

    # 1. The console: the page logs nothing, so any message is an error or a warning.
    console = [l for l in open(o.console, errors="replace") if ":CONSOLE" in l]
    for line in console:
        problems.append("browser console: " + line.strip())

    # 2. Every figure drawn.
    expect("figures counted by the page", dom.root.get("data-figures"), str(len(dom.figures)))
    wanted = ["host-bytes", "host-ops", "rank-bytes", "rank-ops", "bandwidth-hosts", "bandwidth-qps"]
    if o.ops_per_pair:
        wanted.append("latency")  # Full mode
    if o.gpu_wqes:
        wanted += ["gpu-bytes", "gpu-ops", "bandwidth-gpus", "doorbell-rate", "kernel-doorbells"]
    for want in wanted:
        if want not in dom.figures:
            problems.append(f"figure {want} is missing (figures: {', '.join(dom.figures)})")
    for fid, f in dom.figures.items():
        if f["svgs"] < 1 or f["paths"] < 1:
            problems.append(f"figure {fid} drew nothing ({f['svgs']} svg, {f['paths']} paths)")

    # 3. The summary and the processes tables.
    procs = agg["processes"]
    summary = {row[0][0]: row[1] for row in dom.tables.get("summary", [])[1:]}
    want_summary = {
        "events": agg["events"], "processes": len(procs), "hosts": len(agg["hosts"]),
        "operations": sum(p["ops"] for p in procs), "bytes out (writes, sends, atomics)": sum(p["bytes_out"] for p in procs),
        "bytes read": sum(p["bytes_read"] for p in procs), "completions": sum(p["completions"] for p in procs),
        "errors": agg["errors"], "events dropped": agg["events_dropped"],
    }
    for key, want in want_summary.items():
        cell = summary.get(key)
        expect(f"summary '{key}' (data-value)", cell and cell[1], str(want))
        expect(f"summary '{key}' (text)", cell and cell[0].replace(",", ""), str(want))
    rows = {r[0][0]: r for r in dom.tables.get("processes", [])[1:]}
    for p in procs:
        r = rows.get(p["label"])
        if not r:
            problems.append(f"process {p['label']} is not in the processes table")
            continue
        for col, key in ((3, "ops"), (4, "bytes_out"), (5, "bytes_read"), (6, "completions"), (7, "errors"), (8, "events_dropped")):
            expect(f"{p['label']} {key}", r[col][1], str(p[key]))

    # 4. Heatmaps: the numbers written in the cells are exactly the matrix's non-zero cells.
    for kind, m in agg["matrices"].items():
        for what in ("bytes", "ops"):
            fid = f"{kind}-{what}"
            if fid not in dom.figures:
                continue
            shown = sorted(int(t.replace(",", "")) for t in dom.figures[fid]["texts"] if NUMBER.match(t))
            cells = sorted(v for row in m[what] for v in row if v)
            expect(f"{fid} cell labels", shown, cells)

    # 5. What the program was known to do. The perftest pairs: WRITEs b -> a, SENDs a -> b, READs
    #    by b of a (bytes a -> b). A GPU-initiated run: every WQE softnic executed, recovered.
    if o.ops_per_pair:
        host = agg["matrices"]["host"]
        ia, ib = host["labels"].index("node-a"), host["labels"].index("node-b")
        n = o.ops_per_pair * o.bytes_per_op
        expect("host matrix node-a -> node-b bytes", host["bytes"][ia][ib], 2 * n)
        expect("host matrix node-b -> node-a bytes", host["bytes"][ib][ia], n)
    if o.gpu_wqes:
        expect("GPU WQEs recovered", sum(g["wqe_recovery"]["wqes_recovered"] for g in agg["gpus"]), o.gpu_wqes)
        kernels = {(r[0][0], r[1][0]): (r[2][1], r[3][1], r[4][1]) for r in dom.tables.get("kernels", [])[1:]}
        want_k = {(k["kernel_name"] or "(no launch seen)", k["gpu_label"]): (str(k["doorbells"]), str(k["wqebbs"]), str(k["wqes"]))
                  for k in agg["series"]["kernels"][:20]}
        expect("kernels table (doorbells, WQEBBs, WQEs)", kernels, want_k)
        rung = sum(g["doorbells"] for g in agg["gpus"])
        expect("series: doorbells, all GPUs", sum(sum(g["doorbells"]) for g in agg["series"]["gpus"]), rung)
        caption = dom.figures.get("doorbell-rate", {}).get("caption", "")
        expect("doorbell-rate caption", caption.split(" doorbells")[0].replace(",", ""), str(rung))

    # 6. The series add up to the counters: bandwidth per host against bytes out + read, latency
    #    histograms against the table.
    s = agg["series"]
    moved = sum(p["bytes_out"] + p["bytes_read"] for p in procs)
    moving_ops = sum(v["ops"] for p in procs for k, v in p["by_opcode"].items() if k not in NOT_TRAFFIC)
    expect("series: bytes over time, all hosts", sum(h["total_bytes"] for h in s["hosts"]), moved)
    expect("series: bytes in the bins", sum(sum(h["bytes"]) for h in s["hosts"]), moved)
    expect("series: operations over time, all hosts", sum(h["total_ops"] for h in s["hosts"]), moving_ops)
    caption = dom.figures.get("bandwidth-hosts", {}).get("caption", "")
    m = re.match(r"([\d,]+) bytes in ([\d,]+) operations", caption)
    expect("bandwidth-hosts caption", m and (int(m.group(1).replace(",", "")), int(m.group(2).replace(",", ""))), (moved, moving_ops))
    lat = {(r[0][0], r[1][0]): r[2][1] for r in dom.tables.get("latency", [])[1:]}
    expect("latency table", lat, {(h["layer"], h["opcode"]): str(h["ops"]) for h in s["latency"]})
    for h in s["latency"]:
        expect(f"latency {h['opcode']} buckets", sum(b["ops"] for b in h["buckets"]), h["ops"])
    kinds = {h["opcode"] for h in s["latency"]}
    for k in ("WRITE", "SEND", "READ") if o.ops_per_pair else ():
        if k not in kinds:
            problems.append(f"no duration histogram for {k} (have {sorted(kinds)})")

    # 7. GPU kernels: each kernel's matrix (the 4 that moved most, by process) shows exactly its
    #    bytes; each barrier table says how often each GPU was last, as series.barriers does.
    by_kernel = {}
    for k in s.get("kernels", []):
        if k.get("kernel"):
            by_kernel.setdefault(k["kernel"], []).append(k)
    moved = lambda rows: sum(t["bytes"] for k in rows for t in k.get("to_peers", []))
    senders = sorted((r for r in by_kernel.values() if moved(r)), key=moved, reverse=True)[:4]
    for i, rows in enumerate(senders):
        fid = f"kernel-{i}-bytes"
        cells = {}
        for k in rows:
            for t in k.get("to_peers", []):
                key = (k["process_id"], t["process_id"])
                cells[key] = cells.get(key, 0) + t["bytes"]
        shown = sorted(int(t.replace(",", "")) for t in dom.figures.get(fid, {}).get("texts", []) if NUMBER.match(t))
        expect(f"{fid} cell labels", shown, sorted(v for v in cells.values() if v))
    moves_data = lambda b: any(p["kind"] == "data" for k in by_kernel.get(b["kernel"], []) for p in k.get("phases", []))
    for i, b in enumerate(sorted(s.get("barriers", []), key=lambda b: (not moves_data(b), -b["barriers"]))[:3]):
        rows = [(r[0][0], r[1][1], r[2][1]) for r in dom.tables.get(f"barriers-{i}", [])[1:]]
        expect(f"barriers-{i} table", rows, [(p["gpu_label"], str(p["control_phases"]), str(n)) for p, n in zip(b["participants"], b["last_count"])])
    if o.case_study:
        need = {"moe": ["kernel-0-bytes", "kernel-1-bytes"], "bfs": ["barriers-0", "phases-0"]}[o.case_study]
        for fid in need:
            if fid not in dom.figures:
                problems.append(f"case study {o.case_study}: figure {fid} is missing")

    # 8. The changes from a baseline: the table holds every change of the diff, in its order,
    #    with the time each explains.
    if o.diff:
        d = json.load(open(o.diff))
        if d["changes"] and "diff-explains" not in dom.figures:
            problems.append("figure diff-explains is missing")
        rows = [(r[0][0], r[1][0], r[6][1]) for r in dom.tables.get("diff", [])[1:]]
        expect("diff table (group, row, explains ns)", rows, [(c["group"], c["key"], str(round(c["explains_ns"]))) for c in d["changes"]])

    # 8b. NCCL's calls: the figure, and one table row per kind of call with its calls and ranks.
    if agg.get("nccl_calls"):
        if "nccl-calls" not in dom.figures:
            problems.append("figure nccl-calls is missing")
        rows = sorted((r[1][1], r[2][1]) for r in dom.tables.get("nccl-calls", [])[1:])
        expect("nccl-calls table (ranks, calls)", rows, sorted((str(c["ranks"]), str(c["calls"])) for c in agg["nccl_calls"]))

    # 9. Every figure as a file: an SVG that parses, with marks, and a PNG with a size.
    files = sorted(os.listdir(o.plots))
    expect("plot files", files, sorted([f + ".svg" for f in dom.figures] + [f + ".png" for f in dom.figures]))
    for fid in dom.figures:
        try:
            svg = ET.parse(os.path.join(o.plots, fid + ".svg")).getroot()
            if not svg.tag.endswith("svg") or not any(e.tag.endswith("path") for e in svg.iter()):
                problems.append(f"{fid}.svg has no drawn path")
        except (ET.ParseError, OSError) as e:
            problems.append(f"{fid}.svg does not parse: {e}")
        png = open(os.path.join(o.plots, fid + ".png"), "rb").read() if os.path.exists(os.path.join(o.plots, fid + ".png")) else b""
        if png[:8] != b"\x89PNG\r\n\x1a\n" or len(png) < 33:
            problems.append(f"{fid}.png is not a PNG")
        else:
            w, h = struct.unpack(">II", png[16:24])
            if w < 500 or h < 300:
                problems.append(f"{fid}.png is {w}x{h}")

    for p in problems:
        print("check_report_dom: " + p)
    if not problems:
        print(f"check_report_dom: {len(dom.figures)} figures rendered and written, every number checked")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

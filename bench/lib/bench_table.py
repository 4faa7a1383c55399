"""The benchmark harness's table (bench/lib/harness.sh): reads OUT/results.tsv, prints one Markdown
table and, with --json FILE, writes the same content as JSON. Per case and metric: each kind's
median over its runs, and each other kind's paired difference to the baseline (the first kind):
each repetition's run minus the baseline's run of the same repetition and case, as the median of
those differences with a distribution-free 95 % interval of that median (order statistics of the
binomial), in the metric's unit and in percent of the baseline run of each pair. A target like
"adds at most 0.5 us" is met only where the interval's upper end is below it, and refuted only
where its lower end is above it. Failed runs (rc not 0) are left out, and listed.
usage: bench_table.py [--json FILE] [--title TEXT] OUT [KIND...]   (default kinds: the order of the
first repetition, whose first kind is KINDS' first; name other kinds to pair with another baseline)
Exit status: 0; 1 when a kind has no successful run; 2 when OUT has no results."""
import csv
import json
import math
import re
import statistics
import sys
from pathlib import Path


def kind_tag(kind):
    """A kind's or case's name as a file name: harness.sh's kind_tag."""
    return re.sub("[:/=, ]", "-", kind)


def run_name(case, kind, rep):
    """The directory of one run under OUT/runs: harness.sh's bench_run_name."""
    return (f"{kind_tag(case)}-" if case else "") + f"{kind_tag(kind)}-{rep}"


def read_results(out):
    """The records of OUT/results.tsv, as dicts with rep, run and rc as integers and value a float
    (None for a run that recorded no metric)."""
    with open(Path(out) / "results.tsv", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    for r in rows:
        r["rep"], r["run"], r["rc"] = int(r["rep"]), int(r["run"]), int(r["rc"])
        r["value"] = float(r["value"]) if r["value"] else None
    return rows


def median_ci(xs):
    """The median and the narrowest interval [x_(k), x_(n-k+1)] (1-based) that holds it with >= 95 %:
    (median, low, high, coverage), low and high None when n is too small for 95 % (n < 6)."""
    xs = sorted(xs)
    n = len(xs)
    med = xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2
    cover, k = 0.0, 0
    for j in range(1, n // 2 + 1):
        # P(x_(j) <= median < x_(n-j+1)) = 1 - 2 * P(Binomial(n, 1/2) < j)
        below = sum(math.comb(n, i) for i in range(j)) / 2 ** n
        if 1 - 2 * below >= 0.95:
            cover, k = 1 - 2 * below, j
    if not k:
        return med, None, None, 0.0
    return med, xs[k - 1], xs[n - k], cover


def paired(base, own):
    """The paired difference of one kind's runs {rep: value} to the baseline's: None without pairs."""
    reps = sorted(set(base) & set(own))
    if not reps:
        return None
    med, lo, hi, cover = median_ci([own[r] - base[r] for r in reps])
    result = {"n": len(reps), "median": med, "low": lo, "high": hi, "coverage": cover, "percent": None}
    if all(base[r] for r in reps):
        pm, plo, phi, _ = median_ci([100.0 * (own[r] - base[r]) / abs(base[r]) for r in reps])
        result["percent"] = {"median": pm, "low": plo, "high": phi}
    return result


def summarize(rows, kinds):
    """The table's content: one row per case, metric and kind, in the order the runs recorded them;
    a kind without any successful run in a case has rows of n 0 ("no run")."""
    values = {}  # (case, metric, kind) -> {rep: value}
    order = []
    for r in rows:
        if r["rc"] == 0 and r["metric"] and r["value"] is not None and r["kind"] in kinds:
            key = (r["case"], r["metric"])
            if key not in order:
                order.append(key)
            values.setdefault(key + (r["kind"],), {})[r["rep"]] = r["value"]
    ran = {(case, kind) for case, _, kind in values}
    out = []
    for case, metric in order:
        base = values.get((case, metric, kinds[0]), {})
        for kind in kinds:
            own = values.get((case, metric, kind), {})
            if not own and (case, kind) in ran:
                continue  # a metric of other kinds only (e.g. a trace's size): not this kind's
            out.append({"case": case, "metric": metric, "kind": kind, "n": len(own),
                        "median": statistics.median(own.values()) if own else None,
                        "paired": paired(base, own) if kind != kinds[0] and base and own else None})
    return out


def decimals(scale):
    """Decimals that show 4 significant digits of numbers of this size."""
    return 3 if not scale else max(0, 3 - math.floor(math.log10(abs(scale))))


def interval(lo, hi, d, cover=None):
    if lo is None:
        return "too few pairs"
    return f"[{lo:+.{d}f}, {hi:+.{d}f}]" + (f" ({cover * 100:.1f} %)" if cover else "")


def table(doc):
    """The Markdown table of a results.json document."""
    kinds, rows = doc["kinds"], doc["rows"]
    cases = any(r["case"] for r in rows)
    lines = [f"### {doc['title']}", ""] if doc["title"] else []
    lines.append(f"{doc['repetitions']} repetitions, kinds rotated; paired: each run minus the {kinds[0]} run of its "
                 "repetition, median and distribution-free 95 % interval (coverage)")
    lines.append("")
    head = ["metric", "kind", "n", "median", "paired difference", "95 % interval", "paired %", "95 % interval"]
    align = ["---", "---", "---:", "---:", "---:", "---", "---:", "---"]
    if cases:
        head, align = ["case"] + head, ["---"] + align
    lines += ["| " + " | ".join(head) + " |", "|" + "|".join(align) + "|"]
    scale, counts = {}, {}  # per case and metric: the baseline's median (else the first), whether all are whole
    for r in rows:
        key = (r["case"], r["metric"])
        if r["kind"] == kinds[0] or key not in scale:
            scale[key] = r["median"] or scale.get(key)
        whole = r["median"] is None or float(r["median"]).is_integer()
        counts[key] = counts.get(key, True) and whole and (not r["paired"] or float(r["paired"]["median"]).is_integer())
    for r in rows:
        key = (r["case"], r["metric"])
        d = 0 if counts[key] else decimals(scale[key])
        cells = [r["metric"], r["kind"], str(r["n"]), "no run" if r["median"] is None else f"{r['median']:.{d}f}"]
        p = r["paired"]
        if p:
            cells += [f"{p['median']:+.{d}f}", interval(p["low"], p["high"], d, p["coverage"])]
            q = p["percent"]
            cells += [f"{q['median']:+.2f} %", interval(q["low"], q["high"], 2)] if q else ["", ""]
        else:
            cells += ["", "", "", ""]
        lines.append("| " + " | ".join(([r["case"]] if cases else []) + cells) + " |")
    for f in doc["failed"]:
        lines.append(f"- failed: rep {f['rep']} {f['case'] + ' ' if f['case'] else ''}{f['kind']}, status {f['rc']}")
    return "\n".join(lines)


def document(rows, kinds, title=""):
    """results.json's content."""
    runs = {(r["run"], r["rep"], r["case"], r["kind"], r["rc"]) for r in rows}
    return {"title": title, "baseline": kinds[0], "kinds": kinds,
            "repetitions": max((r["rep"] for r in rows), default=0),
            "runs": len(runs),
            "failed": [{"rep": rep, "case": case, "kind": kind, "rc": rc}
                       for _, rep, case, kind, rc in sorted(runs) if rc != 0],
            "rows": summarize(rows, kinds)}


def main(argv):
    json_path, title = None, ""
    while argv[:1] in (["--json"], ["--title"]):
        if argv[0] == "--json":
            json_path = argv[1]
        else:
            title = argv[1]
        argv = argv[2:]
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    out, kinds = Path(argv[0]), argv[1:]
    try:
        rows = read_results(out)
    except OSError as e:
        print(f"bench_table.py: no results in {out} ({e.strerror})", file=sys.stderr)
        return 2
    if not kinds:
        first = min((r["rep"] for r in rows), default=0)
        kinds = list(dict.fromkeys(r["kind"] for r in sorted(rows, key=lambda r: r["run"]) if r["rep"] == first))
    if not kinds:
        print(f"bench_table.py: no runs in {out}/results.tsv", file=sys.stderr)
        return 2
    doc = document(rows, kinds, title)
    print(table(doc))
    if json_path:
        Path(json_path).write_text(json.dumps(doc, indent=1) + "\n")
    ok = {r["kind"] for r in rows if r["rc"] == 0 and r["metric"]}
    missing = [k for k in kinds if k not in ok]
    for k in missing:
        print(f"- {k}: no successful run")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

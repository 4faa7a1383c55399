"""The rules the tree keeps (docs/writing-a-provider.md, the layout in README.md), checked on the
source itself:
  - inside src/profiler, folders include each other in one direction only (lifecycle -> providers
    -> doorbell -> gpu -> runtime): no cycle between folders;
  - no provider includes another provider's files (shared parts live below them);
  - src/ and testbed/ never include each other's private parts the wrong way: the test bed uses
    src/mlx5 and src/format only, never the profiler;
  - no source file in src/, testbed/ or tests/ is over 650 lines.
usage: tree_rules_test.py SOURCE_DIR"""
import re
import sys
from collections import defaultdict
from pathlib import Path

root = Path(sys.argv[1])
MAX_LINES = 650
SOURCE_SUFFIXES = {".cpp", ".h", ".hpp", ".cu", ".cuh", ".c", ".py", ".sh"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
problems = []


def folder_of(path):
    """The folder a file of src/profiler belongs to: providers/X for a provider, else its directory."""
    rel = path.relative_to(root / "src")
    parts = rel.parts[:-1]
    return "/".join(parts[:3] if parts[:2] == ("profiler", "providers") and len(parts) > 2 else parts)


# Folder-level include graph of src/profiler.
edges = defaultdict(set)
for f in sorted((root / "src" / "profiler").rglob("*")):
    if f.suffix not in {".cpp", ".h", ".hpp"}:
        continue
    src = folder_of(f)
    for inc in INCLUDE.findall(f.read_text(errors="replace")):
        target = root / "src" / inc
        if not inc.startswith("profiler/") or not target.exists():
            continue
        dst = folder_of(target)
        if dst != src:
            edges[src].add(dst)
            if src.startswith("profiler/providers/") and dst.startswith("profiler/providers/"):
                problems.append(f"{f.relative_to(root)} includes {inc}: a provider includes another provider's files")


def find_cycle():
    """One cycle of the folder graph as a list of folders, or None."""
    state, stack = {}, []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(edges[n]):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                c = visit(m)
                if c:
                    return c
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(list(edges)):
        if n not in state:
            c = visit(n)
            if c:
                return c
    return None


cycle = find_cycle()
if cycle:
    problems.append("folders of src/profiler include each other: " + " -> ".join(cycle))

# The test bed depends on src/mlx5 and src/format, never on the profiler or the analysis.
for f in sorted((root / "testbed").rglob("*")):
    if f.suffix in {".cpp", ".h", ".hpp", ".cu", ".cuh"}:
        for inc in INCLUDE.findall(f.read_text(errors="replace")):
            if inc.startswith(("profiler/", "analysis/", "export/")):
                problems.append(f"{f.relative_to(root)} includes {inc}: the test bed depends on the profiler or the analysis")

for top in ("src", "testbed", "tests"):
    for f in sorted((root / top).rglob("*")):
        if f.is_file() and f.suffix in SOURCE_SUFFIXES:
            n = f.read_text(errors="replace").count("\n")
            if n > MAX_LINES:
                problems.append(f"{f.relative_to(root)} has {n} lines (at most {MAX_LINES}: one job per file)")

for p in problems:
    print(p)
print(f"folder graph of src/profiler: " + "; ".join(f"{a} -> {', '.join(sorted(b))}" for a, b in sorted(edges.items())))
print(f"{len(problems)} problem(s)")
sys.exit(1 if problems else 0)

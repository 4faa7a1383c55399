"""Numbers of a benchmark program's JSON results, for bench_record_json (harness.sh): prints
"NAME<TAB>VALUE" per KEY present with a number, NAME being KEY, or with --by FIELD (the file an
array of objects) "OBJECT[FIELD] KEY" for each object. A file that is missing or not JSON prints
nothing and exits 1: the run that should have written it failed.
usage: json_fields.py FILE [--by FIELD] KEY..."""
import json
import sys


def fields(doc, keys, by=None):
    """[(name, value)] of the numbers under keys, in the file's order of objects and keys' order."""
    objects = doc if by else [doc]
    out = []
    for o in objects if isinstance(objects, list) else []:
        if not isinstance(o, dict):
            continue
        for k in keys:
            v = o.get(k)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                out.append((f"{o.get(by)} {k}" if by else k, v))
    return out


def main(argv):
    path, rest = argv[0], argv[1:]
    by = None
    if rest[:1] == ["--by"]:
        by, rest = rest[1], rest[2:]
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return 1
    for name, value in fields(doc, rest, by):
        print(f"{name}\t{value!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

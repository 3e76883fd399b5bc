"""Reads the log of the os-ken OpenFlow 1.3 switch test tool and prints
the result as Markdown: the total, a table per category (the tool's
top-level directories: action, group, match, meter) and every failure
with the tool's reason.

    python3 conformance_table.py TESTER_LOG [--title TEXT]

The tool prints a header per file ("match: 00_IN_PORT", "action:
set_field: 03_ETH_DST"), then one line per case ending in OK or ERROR,
an ERROR followed by an indented reason. Throughput cases print progress
dots before their line. Exits 1 if the log holds no case at all (the
tool did not run), so a harness cannot mistake silence for a pass.
"""
import re
import sys
from collections import OrderedDict

FILE_RE = re.compile(r"^(action|group|match|meter): (.+)$")
CASE_RE = re.compile(r"^\.*\s{4}(\S.*?)\s+(OK|ERROR)$")


def parse(lines):
    cases = []  # (category, file, case, result, reason)
    category, name = None, None
    for i, line in enumerate(lines):
        line = line.rstrip("\n")
        m = FILE_RE.match(line)
        if m:
            category, name = m.group(1), m.group(2)
            continue
        m = CASE_RE.match(line)
        if m and category:
            reason = ""
            if m.group(2) == "ERROR" and i + 1 < len(lines):
                reason = lines[i + 1].strip()
            cases.append((category, name, m.group(1), m.group(2), reason))
    return cases


def render(cases, title):
    out = []
    ok = sum(1 for c in cases if c[3] == "OK")
    out.append(f"{title}: **{ok} of {len(cases)}** passed, {len(cases) - ok} failed.")
    out.append("")
    out.append("| category | files | cases | passed | failed |")
    out.append("|---|---:|---:|---:|---:|")
    cats = OrderedDict()
    for c in cases:
        st = cats.setdefault(c[0], {"files": set(), "cases": 0, "ok": 0})
        st["files"].add(c[1])
        st["cases"] += 1
        st["ok"] += c[3] == "OK"
    for cat, st in cats.items():
        out.append(
            f"| {cat} | {len(st['files'])} | {st['cases']} | {st['ok']} | {st['cases'] - st['ok']} |"
        )
    out.append(f"| all | {sum(len(s['files']) for s in cats.values())} | {len(cases)} | {ok} | {len(cases) - ok} |")
    failed = [c for c in cases if c[3] != "OK"]
    if failed:
        out.append("")
        out.append("Failures (file, case, the tool's reason):")
        out.append("")
        for cat, name, case, _, reason in failed:
            reason = reason if len(reason) <= 300 else reason[:300] + " ..."
            out.append(f"- `{cat}: {name}` `{case}`: {reason}")
    return "\n".join(out)


def main():
    args = sys.argv[1:]
    title = "Result"
    if "--title" in args:
        i = args.index("--title")
        title = args[i + 1]
        del args[i:i + 2]
    with open(args[0], encoding="utf-8", errors="replace") as f:
        cases = parse(f.readlines())
    if not cases:
        print("conformance_table: no case in the log: the tool did not run", file=sys.stderr)
        sys.exit(1)
    print(render(cases, title))


if __name__ == "__main__":
    main()

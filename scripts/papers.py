#!/usr/bin/env python3
"""The pattern-detection papers' tables beside rankscale's, from the authors'
own results.

Alawneh and Hamou-Lhadj published, for each trace, `orderedcommunications.txt`
(every pattern with its instance count, events and processes) and, for some,
`commpatternandphaseslist.txt` (one line per instance: phase, pattern, slow
flag, times). This script unpacks each published set from the shared copy,
imports its text traces, runs `rankscale analyze --pattern-key unordered
--json` (each rank's events as a set, the authors' key) and prints one
Markdown table: patterns and instances (which must be equal), whether the
multiset of (instances, events, processes) per pattern is equal, and the
phases and slow instances side by side (these follow different settings, see
docs/ANALYSIS.md).

usage: scripts/papers.py [RANKSCALE] [SHARED-DIR]
"""
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import zipfile

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
rs = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "target/mpich/release/rankscale")
shared = (sys.argv[2] if len(sys.argv) > 2
          else os.path.join(root, "../shared/third-party/hpc-mpi-traces"))
SETS = ["smg4.10", "smg128", "amg64", "bt100A"]


def authors_patterns(path):
    """(instances, events, processes) of every pattern of the authors' file."""
    out = []
    with open(path) as f:
        for line in f:
            m = re.match(r"CP\d+: \((\d+)\) Events: (\d+), Processes: (\d+)", line)
            if m:
                out.append(tuple(int(x) for x in m.groups()))
    return out


def authors_phases(results):
    """(phases, slow instances, instances) of the authors' instance list, or None."""
    text = None
    plain = os.path.join(results, "commpatternandphaseslist.txt")
    packed = os.path.join(results, "commpatternandphaseslist.zip")
    if os.path.exists(plain):
        with open(plain) as f:
            text = f.read()
    elif os.path.exists(packed):
        with zipfile.ZipFile(packed) as z:
            name = next(n for n in z.namelist() if n.endswith(".txt"))
            text = z.read(name).decode()
    if text is None:
        return None
    lines = [l for l in text.splitlines() if l.startswith("ph:")]
    phases = {l.split(",")[0] for l in lines}
    slow = sum("slow: true" in l for l in lines)
    return len(phases), slow, len(lines)


def ours(trace_dir, work):
    trace = os.path.join(work, "t.trace")
    subprocess.run([rs, "import", "--format", "pertext", trace_dir, "-o", trace],
                   check=True, capture_output=True)
    out = subprocess.run([rs, "analyze", trace, "--json", "--pattern-key", "unordered"],
                         check=True, capture_output=True, text=True).stdout
    r = json.loads(out[out.index("{"):])
    pats = [(p["instances"] if isinstance(p["instances"], int) else len(p["instances"]),
             p["ne"], p["np"]) for p in r["patterns"]]
    instances = sum(n for _, n in r["sequence"])
    return pats, instances, len(r["phases"]), len(r["slow"])


def main():
    rows = []
    for s in SETS:
        tarball = os.path.join(shared, s + ".tar.xz")
        if not os.path.exists(tarball):
            print(f"skipped {s}: {tarball} not found", file=sys.stderr)
            continue
        with tempfile.TemporaryDirectory() as work:
            subprocess.run(["tar", "xf", tarball, "-C", work], check=True)
            results = os.path.join(work, "results", s)
            theirs = authors_patterns(os.path.join(results, "orderedcommunications.txt"))
            phases = authors_phases(results)
            pats, instances, our_phases, our_slow = ours(os.path.join(work, "traces", s), work)
        same = collections.Counter(theirs) == collections.Counter(pats)
        a_inst = sum(p[0] for p in theirs)
        ph = f"{phases[0]} / {our_phases}" if phases else f"— / {our_phases}"
        sl = f"{phases[1]} / {our_slow}" if phases else f"— / {our_slow}"
        rows.append(f"| {s} | {len(theirs)} / {len(pats)} | {a_inst:,} / {instances:,} | "
                    f"{'equal' if same else 'DIFFERENT'} | {ph} | {sl} |")
        print(f"{s}: done", file=sys.stderr)
    print("| trace | patterns (authors / ours) | instances | per pattern (instances, events, processes) | phases | slow instances |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(r)
    return 0 if all("DIFFERENT" not in r for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())

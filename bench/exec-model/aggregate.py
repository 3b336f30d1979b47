#!/usr/bin/env python3
"""Aggregate results/raw.csv -> median tables (markdown) on stdout."""
import csv, statistics as st, sys
from collections import defaultdict
rows = list(csv.DictReader(open(sys.argv[1] if len(sys.argv) > 1 else "results/raw.csv")))
d = defaultdict(list)
for r in rows:
    t = r["test"]
    t = "LOCKSIM" if t.startswith(("LOCKSIM", "HINCRBY")) else t
    d[(r["config"], r["bench"], t)].append(r)
cfgs = ["redis", "mutex", "tmutex", "exec-cb-1w", "exec-cb-2w", "exec-std-1w", "exec-std-2w", "current"]
cols = [("P1", "SET"), ("P1", "GET"), ("P1", "PING_MBULK"), ("LK1", "LOCKSIM"),
        ("P16", "SET"), ("P16", "GET"), ("P16", "PING_MBULK"), ("LK16", "LOCKSIM")]
med = lambda k, f: st.median(float(x[f]) for x in d[k])
print("| mode | " + " | ".join(f"{t} -P{b[-2:].lstrip('PK')}" for b, t in cols) + " |")
print("|---" * (len(cols) + 1) + "|")
for c in cfgs:
    cells = []
    for b, t in cols:
        v, ref = med((c, b, t), "rps"), med(("redis", b, t), "rps")
        cells.append(f"{v/1000:.0f}k ({v/ref:.2f})")
    print(f"| {c} | " + " | ".join(cells) + " |")
print()
print("| mode | rps | p50 ms | p99 ms | p99 ms (min..max over rounds) |")
print("|---|---|---|---|---|")
for c in cfgs:
    k = (c, "LAT", "GET")
    p99s = [float(x["p99_ms"]) for x in d[k]]
    print(f"| {c} | {med(k,'rps')/1000:.1f}k | {med(k,'p50_ms'):.3f} | {med(k,'p99_ms'):.3f} | {min(p99s):.3f}..{max(p99s):.3f} |")
print()
print("Spread of P1 GET rps over rounds (min..max, k):")
for c in cfgs:
    v = sorted(float(x["rps"]) / 1000 for x in d[(c, "P1", "GET")])
    print(f"- {c}: " + ", ".join(f"{x:.0f}" for x in v))

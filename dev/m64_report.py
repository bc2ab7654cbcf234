#!/usr/bin/env python3
"""Per shape of `convrs bench` JSON files: the best baseline (cuDNN in-process, PyTorch) and each
named kernel's median, its ratio to the baseline, and kernel B over kernel A.

    python3 dev/m64_report.py A B FILE.json [FILE.json ...]
"""
import json, lzma, math, sys

def med(e):
    t = e.get("timing") if e else None
    return t.get("median_ms") if t else None

def geo(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")

a, b = sys.argv[1], sys.argv[2]
rows = []
for f in sys.argv[3:]:
    d = json.load(lzma.open(f) if f.endswith(".xz") else open(f))
    for s in d["suites"]:
        for g in s["groups"]:
            base = [med(e) for e in (g.get("cudnn") or []) if e.get("layout") == "NHWC" and "bare conv" not in (e.get("note") or "") and med(e)]
            if g.get("pytorch") and med(g["pytorch"]):
                base.append(med(g["pytorch"]))
            ks = {k["name"]: med(k) for k in g["kernels"] if k.get("passed")}
            ta, tb = ks.get(a), ks.get(b)
            if not base or not ta or not tb:
                continue
            bb = min(base)
            rows.append((g["shape"], bb, ta, tb))
for shape, bb, ta, tb in rows:
    print(f"{str(shape)[:44]:44s} base {bb*1e3:8.1f}us  {a[-12:]} {ta*1e3:8.1f} ({bb/ta:.2f}x)  {b[-12:]} {tb*1e3:8.1f} ({bb/tb:.2f}x)  b/a speedup {ta/tb:.2f}")
print(f"n={len(rows)} geomean b over a {geo([r[2]/r[3] for r in rows]):.3f}; vs base: a {geo([r[1]/r[2] for r in rows]):.3f} b {geo([r[1]/r[3] for r in rows]):.3f} best {geo([r[1]/min(r[2],r[3]) for r in rows]):.3f}")
print(f"b faster than a by >5% on {sum(r[2]/r[3] > 1.05 for r in rows)}, slower by >5% on {sum(r[2]/r[3] < 0.95 for r in rows)}")

#!/usr/bin/env python3
"""Old bundle against new on the same shapes (the JSON of two `convrs bench` runs, e.g. dev/cmp.sh's
old-fp16.json and new-fp16.json):

    python3 dev/cmp_report.py OLD.json NEW.json [OLD_NAME=NEW_NAME ...]

Per kernel (old names mapped to new ones), the geometric mean of new/old median times over the
shapes both measured, the range, and the best kernel per shape (the fastest of those compared). The
baselines (cuDNN) are the same code in both runs: their new/old ratio is the noise between the runs,
printed first, so a kernel's change can be read against it.
"""
import json
import lzma
import math
import sys


def load(path):
    d = json.load(lzma.open(path) if path.endswith(".xz") else open(path))
    return [g for s in d["suites"] for g in s["groups"]]


def median(e):
    t = e.get("timing") if e else None
    return t.get("median_ms") if t else None


def geo(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    old, new = load(sys.argv[1]), load(sys.argv[2])
    rename = dict(a.split("=", 1) for a in sys.argv[3:])
    new_by = {(g["shape"], g["precision"]): g for g in new}
    per_kernel, baseline, best = {}, [], []
    for g in old:
        n = new_by.get((g["shape"], g["precision"]))
        if not n:
            continue
        ob = [median(e) for e in g["cudnn"] if median(e)]
        nb = [median(e) for e in n["cudnn"] if median(e)]
        if ob and nb:
            baseline.append(min(nb) / min(ob))
        ok = {rename.get(k["name"], k["name"]): median(k) for k in g["kernels"] if median(k) and k.get("passed")}
        nk = {k["name"]: median(k) for k in n["kernels"] if median(k) and k.get("passed")}
        for name in ok.keys() & nk.keys():
            per_kernel.setdefault(name, []).append((nk[name] / ok[name], g["shape"]))
        if ok and nk:
            best.append((min(nk.values()) / min(ok.values()), g["shape"]))
    print(f"baseline (cuDNN, same code both runs): new/old geomean {geo(baseline):.3f} over {len(baseline)} shapes, range {min(baseline, default=0):.3f}..{max(baseline, default=0):.3f}")
    for name, rs in sorted(per_kernel.items()):
        xs = [r for r, _ in rs]
        lo, hi = min(rs), max(rs)
        print(f"{name:40s} new/old geomean {geo(xs):.3f} over {len(xs)} shapes, range {lo[0]:.3f} ({lo[1]}) .. {hi[0]:.3f} ({hi[1]})")
    if best:
        xs = [r for r, _ in best]
        print(f"{'best compared kernel per shape':40s} new/old geomean {geo(xs):.3f} over {len(xs)} shapes, worst {max(best)[0]:.3f} ({max(best)[1]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

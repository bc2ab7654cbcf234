"""Summarizes a partial or whole `convrs bench --json` run with an epilogue: per shape our best
kernel, cuDNN fused graph, PyTorch eager, cuDNN bare; geomeans of the judged ratios."""
import json, math, sys
for path in sys.argv[1:]:
    d = json.load(open(path))
    print(path, d.get("commit"), d.get("partial", "whole"))
    rs, rc, rp = [], [], []
    for s in d["suites"]:
        for g in s["groups"]:
            j = g.get("judgement") or {}
            if not j.get("ratio"):
                continue
            ks = [k for k in g["kernels"] if k.get("timing")]
            best = min(ks, key=lambda k: k["timing"]["median_ms"]) if ks else None
            t = lambda xs: min((x["timing"]["median_ms"] for x in xs if x.get("timing")), default=float("nan"))
            fused = t(g.get("cudnn_fused", []))
            bare = t(g.get("cudnn", []))
            # A row timed by events (its capture failed) carries host launch gaps: marked `!`.
            ev = "!" if best and best["timing"].get("method") == "events" else " "
            print(f"  {g['shape']:45s} {best['name'] if best else '-':28s} {best['timing']['median_ms']*1e3 if best else 0:8.1f}{ev}us  fusedgraph {fused*1e3:8.1f}  cudnn bare {bare*1e3:8.1f}  ratio {j['ratio']:.2f} (vs cudnn {j.get('ratio_vs_cudnn') or 0:.2f}, vs torch {j.get('ratio_vs_pytorch') or 0:.2f})")
            rs.append(j["ratio"])
            if j.get("ratio_vs_cudnn"): rc.append(j["ratio_vs_cudnn"])
            if j.get("ratio_vs_pytorch"): rp.append(j["ratio_vs_pytorch"])
    gm = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")
    print(f"  shapes {len(rs)}: geomean vs stronger {gm(rs):.3f} ({sum(r >= 1 for r in rs)} >= 1.0), vs cuDNN fused {gm(rc):.3f}, vs PyTorch eager {gm(rp):.3f}; worst {min(rs):.2f}")

"""Depthwise bench JSONs (convrs bench --json, uncompressed or .xz) side by side, per layer: each
of our kernels' median (us), the NHWC caller's best NHWC kernel and the NCHW caller's route
against the best baseline given that layout, and the geomeans. With two files (A, B: e.g. an old
and a new bundle on the same machine) the times of A and B and B/A per kernel.
Usage: python3 dev/depthwise_ab.py A.json[.xz] [B.json[.xz]]"""
import json, lzma, math, sys


def load(path):
    opener = lzma.open if path.endswith('.xz') else open
    with opener(path, 'rt') as f:
        return {g['shape']: g for g in json.load(f)['suites'][0]['groups']}


def us(entry):
    return entry['timing']['median_ms'] * 1000 if entry and entry.get('timing') else None


def best(entries):
    ts = [us(e) for e in entries if us(e)]
    return min(ts) if ts else None


def summary(groups):
    """Per layer: (our kernel times, NHWC caller ratio, NCHW caller ratio)."""
    out = {}
    for shape, g in groups.items():
        ks = {k['name']: us(k) for k in g['kernels'] if us(k)}
        nhwc_ours = min((t for n, t in ks.items() if 'nhwc' in n), default=None)
        base = best((g.get('cudnn') or []) + [g.get('pytorch')])
        nchw_base = best((g.get('nchw_cudnn') or []) + [g.get('nchw_pytorch')])
        user = us(g.get('nchw_user'))
        out[shape] = (ks, base / nhwc_ours if nhwc_ours and base else None, nchw_base / user if user and nchw_base else None)
    return out


def geo(xs):
    xs = [x for x in xs if x]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float('nan')


runs = [summary(load(p)) for p in sys.argv[1:3]]
for shape in runs[0]:
    cells = []
    for name in sorted(runs[0][shape][0]):
        ts = [r[shape][0].get(name) for r in runs if shape in r]
        cell = f"{name.replace('depthwise_', '')} " + '/'.join(f"{t:.1f}" if t else '-' for t in ts)
        if len(ts) == 2 and all(ts):
            cell += f" ({ts[1] / ts[0]:.2f})"
        cells.append(cell)
    ratios = ' | '.join(f"NHWC {r[shape][1] or 0:.2f}x NCHW {r[shape][2] or 0:.2f}x" for r in runs if shape in r)
    print(f"{shape:32s} {'  '.join(cells)}  || {ratios}")
for i, r in enumerate(runs):
    v = list(r.values())
    print(f"run {'AB'[i]}: NHWC caller {geo(x[1] for x in v):.3f}x ({sum(1 for x in v if x[1] and x[1] >= 1)}/{len(v)} at or above 1.0x), NCHW caller {geo(x[2] for x in v):.3f}x")

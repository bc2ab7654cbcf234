"""The NCHW caller's rows of bench JSONs (convrs bench --json, plain or .xz), one suite split over
several files: per layer the caller's route and its time against the best baseline given NCHW
and against our fastest NHWC kernel in the same run, then the geomean, the count at or above
1.0x and below 0.9x, and the geomeans by kind (1x1 or R x S) and route (a kernel on NCHW data,
the input's transpose to a kernel writing NCHW, or the transposes around an NHWC kernel).
Under an epilogue (the bench's `--epilogue`), the baselines are cuDNN's fused graph and PyTorch
eager given NCHW, as the bench judges them.
Where the run timed Auto's route for that caller (`nchw_auto`, bundles from 2026-12-05 on), also
Auto's geomean against the same baselines and its time over the best route's.
Usage: python3 dev/nchw_user_summary.py FILE.json[.xz]..."""
import json, lzma, math, sys


def us(e):
    return e['timing']['median_ms'] * 1000 if e and e.get('timing') else None


def geo(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs))


ratios, kinds, owns, autos, auto_over = [], {}, [], [], []
for path in sys.argv[1:]:
    with (lzma.open if path.endswith('.xz') else open)(path, 'rt') as f:
        groups = json.load(f)['suites'][0]['groups']
    for g in groups:
        # With an epilogue the caller's row is the whole layer: its baselines are cuDNN's fused
        # graph and PyTorch eager; cuDNN's bare convolution (`nchw_cudnn`) is not the same work.
        fused = g.get('epilogue') not in (None, 'none')
        cudnn = g.get('nchw_cudnn_fused' if fused else 'nchw_cudnn') or []
        base = [us(c) for c in cudnn + [g.get('nchw_pytorch')] if us(c)]
        user = us(g.get('nchw_user'))
        if not user or not base:
            print(f"{g['shape']:36s} no NCHW caller row")
            continue
        r = min(base) / user
        ratios.append(r)
        name = g['nchw_user']['name']
        route = 'input transpose' if '_to_nchw' in name else 'native' if 'nchw' in name else 'transposes'
        kind = '1x1' if '1x1' in g['shape'] else 'RxS'
        for k in (kind, f"{kind} {route}"):
            kinds.setdefault(k, []).append(r)
        # Our fastest kernel on NHWC data in the same run: what the caller's transforms cost.
        nhwc = [us(k) for k in g.get('kernels') or [] if us(k) and k.get('passed')]
        if nhwc:
            owns.append(min(nhwc) / user)
        own = f"  {min(nhwc) / user:4.2f} of our NHWC {min(nhwc):6.1f}" if nhwc else ""
        auto = us(g.get('nchw_auto'))
        if auto:
            autos.append(min(base) / auto)
            auto_over.append(auto / user)
        note = f"  Auto {g['nchw_auto']['name']} {auto / user:4.2f}x the best" if auto and g['nchw_auto']['name'] != name else ""
        print(f"{g['shape']:36s} {user:8.1f} us  NCHW baseline {min(base):8.1f}  {r:5.2f}x{own}  [{name}]{note}")
print(f"NCHW caller against the best NCHW baseline: {geo(ratios):.3f}x, {sum(r >= 1 for r in ratios)}/{len(ratios)} at or above 1.0x, {sum(r < 0.9 for r in ratios)} below 0.9x")
if autos:
    print(f"  Auto's route (what DeviceConv with Algorithm::Auto runs) against the best NCHW baseline: {geo(autos):.3f}x on {len(autos)} layers; over the best route: geomean {geo(auto_over):.3f}, {sum(a <= 1.05 for a in auto_over)} within 5%, worst {max(auto_over):.2f}")
if owns:
    print(f"  our NHWC time over the caller's (issue 23 asks 0.9 or more): geomean {geo(owns):.3f}, worst {min(owns):.2f}")
for k, v in sorted(kinds.items()):
    print(f"  {k}: {len(v)} layers, {geo(v):.3f}x, {sum(r >= 1 for r in v)} at or above 1.0x")

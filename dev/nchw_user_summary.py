"""The NCHW caller's rows of bench JSONs (convrs bench --json, plain or .xz), one suite split over
several files: per layer the caller's route and its time against the best baseline given NCHW,
then the geomean, the count at or above 1.0x and below 0.9x, and the geomeans by kind (1x1 or
R x S) and route (a kernel on NCHW data, the input's transpose to a kernel writing NCHW, or the
transposes around an NHWC kernel).
Usage: python3 dev/nchw_user_summary.py FILE.json[.xz]..."""
import json, lzma, math, sys


def us(e):
    return e['timing']['median_ms'] * 1000 if e and e.get('timing') else None


def geo(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs))


ratios, kinds = [], {}
for path in sys.argv[1:]:
    with (lzma.open if path.endswith('.xz') else open)(path, 'rt') as f:
        groups = json.load(f)['suites'][0]['groups']
    for g in groups:
        base = [us(c) for c in (g.get('nchw_cudnn') or []) + [g.get('nchw_pytorch')] if us(c)]
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
        print(f"{g['shape']:36s} {user:8.1f} us  NCHW baseline {min(base):8.1f}  {r:5.2f}x  [{g['nchw_user']['name']}]")
print(f"NCHW caller against the best NCHW baseline: {geo(ratios):.3f}x, {sum(r >= 1 for r in ratios)}/{len(ratios)} at or above 1.0x, {sum(r < 0.9 for r in ratios)} below 0.9x")
for k, v in sorted(kinds.items()):
    print(f"  {k}: {len(v)} layers, {geo(v):.3f}x, {sum(r >= 1 for r in v)} at or above 1.0x")

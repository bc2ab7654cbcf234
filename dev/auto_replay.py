"""Replays Auto's choice on measured times, without a GPU: for every shape of the bench JSONs given
(convrs bench --json, plain or .xz; NHWC rows, bare or with the run's epilogue), runs `BINARY
explain` for a device model (CONVRS_REPLAY_MODEL, default h200) and takes, among the kernels the
run measured and that passed, the one the model predicts fastest; prints the shapes where that
kernel measured more than 10% above the fastest, then per file and over all files the geomean of
the pick's time over the fastest and the count within 10%. Valid for runs of the same kernels'
build, and only while a model change leaves each kernel's tile as the run planned it (the JSON
does not record the tile: compare `explain`'s launch lines before and after the change).
Usage: python3 dev/auto_replay.py BINARY FILE.json[.xz]..."""
import json, lzma, math, os, re, subprocess, sys

binary, paths = sys.argv[1], sys.argv[2:]
model = os.environ.get('CONVRS_REPLAY_MODEL', 'h200')


def explain_args(shape):
    m = re.match(r"(\d+),(\d+),(\d+),(\d+)->(\d+),(\d+)x(\d+) p(\d+)(?: s(\d+))?(?: g(\d+))?(?: ep=(\S+))?", shape)
    n, c, h, w, k, r, s, p, st, g, ep = m.groups()
    a = ['--shape', f'{n},{c},{h},{w},{k},{r},{s}', '--pad', p]
    a += ['--stride', st] if st else []
    a += ['--groups', g] if g else []
    a += ['--epilogue', ep] if ep else []
    return a


def predictions(shape, dtype):
    out = subprocess.run([binary, 'explain', *explain_args(shape), '--dtype', dtype, '--layout', 'NHWC', '--device-model', model], capture_output=True, text=True).stdout
    pred = {}
    for line in out.splitlines():
        f = [x.strip() for x in line.split('|')]
        if len(f) > 7 and re.match(r'[\d.]+$', f[4]):
            pred[f[1]] = float(f[4])
    return pred


geo = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float('nan')
everything = []
for path in paths:
    with (lzma.open if path.endswith('.xz') else open)(path, 'rt') as f:
        d = json.load(f)
    losses = []
    for s in d['suites']:
        for g in s['groups']:
            measured = {k['name']: k['timing']['median_ms'] * 1e3 for k in g['kernels'] if k.get('timing') and k.get('passed')}
            pred = {k: v for k, v in predictions(g['shape'], g['precision']).items() if k in measured}
            if len(pred) < 2:
                continue
            pick = min(pred, key=pred.get)
            best = min(measured[k] for k in pred)
            loss = measured[pick] / best
            losses.append(loss)
            if loss > 1.1:
                fastest = min(pred, key=lambda k: measured[k])
                print(f"  {loss:4.2f}x {g['precision']} {g['shape']:44s} picks {pick} ({pred[pick]:.1f} predicted, {measured[pick]:.1f} measured); fastest {fastest} ({pred[fastest]:.1f}, {measured[fastest]:.1f})")
    everything += losses
    print(f"{path}: {len(losses)} shapes, pick over fastest geomean {geo(losses):.3f}, within 10% {sum(l <= 1.1 for l in losses)}")
print(f"all: {len(everything)} shapes, pick over fastest geomean {geo(everything):.3f}, within 10% {sum(l <= 1.1 for l in everything)}")

"""Auto for an NCHW caller, replayed on measured times without a GPU, and the fit of the
conversion prices (`select::TRANSFORM_PASS_US`, `TRANSPOSE_RATE`, `SAMPLED_RATE`).

For every 16-bit shape of the bench JSONs given (convrs bench --json, plain or .xz) whose NCHW
caller row ran, `BINARY explain --layout NCHW` (device model CONVRS_REPLAY_MODEL, default h200)
names Auto's pick as `DeviceConv` makes it. Its caller time is estimated as its measured kernel
time plus the conversions it needs, priced by the fit below (the bench times only the best of
three routes from NCHW: `Bench::nchw_user`); where the pick is that route, its measured time.
A run that timed Auto's route (`nchw_auto`) gives its time where the pick is the same.
Prints the shapes where the estimate is over 5% above the best route, then the geomean of
estimate over best and the count within 5%.

--fit: instead, least squares of (caller time - kernel time) over the best routes that convert
(C >= 8, so no channel padding): a fixed cost a pass, plain transposes' and sampled transforms'
bytes (read + written, 2-byte elements, the output's pass as the caller's type) over a rate.
Usage: python3 dev/nchw_auto_replay.py BINARY [--fit] FILE.json[.xz]..."""
import json, lzma, math, os, re, subprocess, sys

args = sys.argv[1:]
binary = args.pop(0)
fit = '--fit' in args
paths = [a for a in args if a != '--fit']
model = os.environ.get('CONVRS_REPLAY_MODEL', 'h200')
# The fit on the fifty-third session's H200 runs (notes/hopper.md §38): us a pass, bytes/us.
PASS_US, PLAIN, SAMPLED = 2.19, 3783e3, 1977e3


def dims(shape):
    m = re.match(r"(\d+),(\d+),(\d+),(\d+)->(\d+),(\d+)x(\d+) p(\d+)(?: s(\d+))?(?: g(\d+))?(?: ep=(\S+))?", shape)
    n, c, h, w, k, r, s, p, st, g, ep = m.groups()
    return dict(n=int(n), c=int(c), h=int(h), w=int(w), k=int(k), r=int(r), s=int(s), p=int(p), st=int(st or 1), g=g, ep=ep)


def explain(shape, dtype):
    d = dims(shape)
    a = ['--shape', f"{d['n']},{d['c']},{d['h']},{d['w']},{d['k']},{d['r']},{d['s']}", '--pad', str(d['p']), '--stride', str(d['st'])]
    a += ['--groups', d['g']] if d['g'] else []
    a += ['--epilogue', d['ep']] if d['ep'] else []
    out = subprocess.run([binary, 'explain', *a, '--dtype', dtype, '--layout', 'NCHW', '--device-model', model], capture_output=True, text=True).stdout
    rows = {f[1]: f for f in ([x.strip() for x in l.split('|')] for l in out.splitlines()) if len(f) > 7 and re.match(r'[\d.]+$', f[4])}
    pick = re.search(r'^pick: (\S+)', out, re.M)
    return rows, pick.group(1) if pick else None


def passes(shape, row):
    """(kind, bytes) of each conversion the kernel of explain row `row` needs from NCHW."""
    d = dims(shape)
    p = (d['h'] + 2 * d['p'] - d['r']) // d['st'] + 1
    q = (d['w'] + 2 * d['p'] - d['s']) // d['st'] + 1
    lx, _, ly = row[3].split('/')
    sampled = 'sampled' in row[7]
    x, y = d['n'] * d['c'] * d['h'] * d['w'] * 2, d['n'] * d['k'] * p * q * 2
    out = []
    if sampled:
        out.append(('sampled', x / d['st'] + d['n'] * d['c'] * p * q * 2))
    elif lx != 'NCHW':
        out.append(('plain', 2 * x))
    if ly != 'NCHW':
        out.append(('plain', 2 * y))
    return out


def priced(ps):
    return sum(PASS_US + b / (SAMPLED if k == 'sampled' else PLAIN) for k, b in ps)


def groups():
    for path in paths:
        with (lzma.open if path.endswith('.xz') else open)(path, 'rt') as f:
            d = json.load(f)
        for suite in d['suites']:
            for g in suite['groups']:
                u = g.get('nchw_user')
                if g['precision'] in ('fp16', 'bf16') and u and u.get('timing'):
                    yield g, u['name'].replace(' from NCHW', ''), u['timing']['median_ms'] * 1e3


def solve(a, b):
    n = len(a[0])
    m = [[sum(r[i] * r[j] for r in a) for j in range(n)] + [sum(r[i] * v for r, v in zip(a, b))] for i in range(n)]
    for i in range(n):
        for j in range(i + 1, n):
            f = m[j][i] / m[i][i]
            m[j] = [x - f * y for x, y in zip(m[j], m[i])]
    x = [0.0] * n
    for i in reversed(range(n)):
        x[i] = (m[i][n] - sum(m[i][k] * x[k] for k in range(i + 1, n))) / m[i][i]
    return x


geo = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float('nan')
kernel_ms = lambda g: {k['name']: k['timing']['median_ms'] * 1e3 for k in g['kernels'] if k.get('timing') and k.get('passed')}
if fit:
    a, b, labels = [], [], []
    for g, route, caller in groups():
        rows, _ = explain(g['shape'], g['precision'])
        kt = kernel_ms(g)
        if dims(g['shape'])['c'] < 8 or route not in rows or route not in kt:
            continue
        ps = passes(g['shape'], rows[route])
        if ps:
            a.append([len(ps), sum(x for k, x in ps if k == 'plain') / 1e6, sum(x for k, x in ps if k == 'sampled') / 1e6])
            b.append(caller - kt[route])
            labels.append(f"{g['precision']} {g['shape']}")
    x = solve(a, b)
    ratios = [sum(p * q for p, q in zip(x, r)) / t for r, t in zip(a, b)]
    print(f"{len(b)} layers: {x[0]:.2f} us a pass, plain {1e3 / x[1]:.0f} GB/s, sampled {1e3 / x[2]:.0f} GB/s; fit over measured {min(ratios):.2f}-{max(ratios):.2f}")
    sys.exit(0)
regrets = []
for g, route, caller in groups():
    rows, pick = explain(g['shape'], g['precision'])
    kt = kernel_ms(g)
    if pick is None or pick not in kt:
        print(f"{g['precision']} {g['shape']}: Auto's pick {pick} has no measured time; skipped")
        continue
    # A run that timed Auto's route (`nchw_auto`) answers for the pick it made then.
    timed = g.get('nchw_auto') or {}
    if timed.get('timing') and timed['name'].replace(' from NCHW', '') == pick:
        estimate = timed['timing']['median_ms'] * 1e3
    else:
        estimate = caller if pick == route else kt[pick] + priced(passes(g['shape'], rows[pick]))
    regrets.append(estimate / caller)
    if estimate > 1.05 * caller:
        print(f"{g['precision']} {g['shape']:36s} Auto {pick} ~{estimate:.1f} us, best route {route} {caller:.1f} us: {estimate / caller:.2f}x")
print(f"{len(regrets)} shapes: Auto's route over the best, geomean {geo(regrets):.3f}, {sum(r <= 1.05 for r in regrets)} within 5%, worst {max(regrets):.2f}")

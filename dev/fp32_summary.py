# Summarizes `convrs bench --dtype fp32 --json` files (.json or .json.xz, e.g. a suite's parts) as
# issue 24 judges them: the TF32 caller (the bench's tf32 line: the fastest of our kernels in the
# caller's layout, the NCHW user's rows in either precision) against the TF32 baselines, and the
# fp32 NCHW user (transforms timed) against the NCHW fp32 baselines. Geomeans, counts, worst.
import json, lzma, math, sys
def t(e): return e['timing']['median_ms'] if e and e.get('timing') and e['timing'].get('median_ms') else None
def ok(e): return e and e.get('passed', True) and t(e)
rows = []
for f in sys.argv[1:]:
    d = json.load(lzma.open(f) if f.endswith('.xz') else open(f))
    for g in d['suites'][0]['groups']:
        tf_base = [t(e) for e in g.get('tf32_cudnn', []) if ok(e)] + ([t(g['tf32_pytorch'])] if ok(g.get('tf32_pytorch')) else [])
        ours_tf = [t(k) for k in g['kernels'] if ok(k) and k.get('user_layout', True)]
        ours_tf += [t(g[k]) for k in ('nchw_user', 'nchw_user_tf32') if ok(g.get(k))]
        fp_base = [t(e) for e in g.get('nchw_cudnn', []) if ok(e)] + ([t(g['nchw_pytorch'])] if ok(g.get('nchw_pytorch')) else [])
        user = t(g.get('nchw_user')) if ok(g.get('nchw_user')) else None
        tf = min(tf_base) / min(ours_tf) if tf_base and ours_tf else None
        fp = min(fp_base) / user if fp_base and user else None
        pick_tf = min(((t(g[k]), g[k]['name']) for k in ('nchw_user', 'nchw_user_tf32') if ok(g.get(k))), default=(0, '-'))[1]
        rows.append((g['shape'], tf, fp, pick_tf, g['nchw_user']['name'] if ok(g.get('nchw_user')) else '-'))
gm = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))
tfs = [r for r in rows if r[1]]; fps = [r for r in rows if r[2]]
print(f"shapes {len(rows)}")
print(f"TF32 caller vs TF32 baselines: geomean {gm([r[1] for r in tfs]):.3f}, >= 1.0: {sum(r[1] >= 1 for r in tfs)}/{len(tfs)}, below 0.85: {sum(r[1] < 0.85 for r in tfs)}")
for r in sorted(tfs, key=lambda r: r[1])[:8]:
    print(f"   {r[0]:36s} {r[1]:.2f}x  {r[3]}")
print(f"fp32 NCHW user vs NCHW fp32 baselines: geomean {gm([r[2] for r in fps]):.3f}, >= 1.0: {sum(r[2] >= 1 for r in fps)}/{len(fps)}")
for r in sorted(fps, key=lambda r: r[2])[:5]:
    print(f"   {r[0]:36s} {r[2]:.2f}x  {r[4]}")

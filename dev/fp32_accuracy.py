# Issue 24's accuracy criterion on `convrs bench --dtype fp32 --json` files (.json or .json.xz):
# on every shape, the fp32 caller's row (the NCHW user's, Precision::Fp32) and every 3xTF32
# kernel row against the most accurate FMA kernel row (rel L2 against the f64 reference).
import json, lzma, sys
def err(e): return e['check']['rel_l2_err'] if e and e.get('passed', True) and e.get('check') else None
fma = lambda n: not n.split(' ')[0].endswith('tf32')
shapes = worse_user = worse_x3 = 0
for f in sys.argv[1:]:
    d = json.load(lzma.open(f) if f.endswith('.xz') else open(f))
    for g in d['suites'][0]['groups']:
        shapes += 1
        best = min((err(k) for k in g['kernels'] if fma(k['name']) and err(k)), default=None)
        if best is None:
            print(f"{g['shape']:36s} no FMA row"); continue
        u = g.get('nchw_user')
        if err(u) and err(u) > best:
            worse_user += 1
            print(f"{g['shape']:36s} user {u['name']:44s} {err(u):.2e} > FMA {best:.2e}")
        for k in g['kernels']:
            if k['name'].split(' ')[0].endswith('3xtf32') and err(k) and err(k) > best:
                worse_x3 += 1
                print(f"{g['shape']:36s} row  {k['name']:44s} {err(k):.2e} > FMA {best:.2e}")
print(f"shapes {shapes}: fp32 caller less accurate than FMA on {worse_user}; 3xTF32 kernel rows less accurate on {worse_x3}")

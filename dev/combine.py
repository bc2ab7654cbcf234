# Combines `convrs bench --json` files (.json or .json.xz; e.g. the two halves of a suite): geomean vs the best baseline, the M >= 4096 and C <= 3 subsets, by layer kind.
import json, math, sys, collections, lzma
groups=[]
for f in sys.argv[1:]:
    d=json.load(lzma.open(f) if f.endswith(".xz") else open(f)); groups+=d['suites'][0]['groups']
def t(e): return e['timing']['median_ms'] if e and e.get('timing') and e['timing'].get('median_ms') else None
rows=[]
for g in groups:
    base=[t(e) for e in g['cudnn']]+[t(g.get('pytorch'))]
    base=[b for b in base if b]
    # Kernels in the caller's layout (files before `user_layout` existed: every kernel).
    ks=[(t(k),k['name']) for k in g['kernels'] if t(k) and k['passed'] and k.get('user_layout', True)]
    if not base or not ks: continue
    best=min(ks); b=min(base)
    n,c,h,w=map(int,g['shape'].split('->')[0].split(','))
    # M = N*P*Q from flops: flops = 2*M*K*C*R*S
    rest=g['shape'].split('->')[1]; k=int(rest.split(',')[0]); rs=rest.split(',')[1].split()[0]; r,s=map(int,rs.split('x'))
    m=g['flops']/(2*k*c*r*s)
    nchw=t(g.get('nchw_user'))
    rows.append((g['shape'], b/best[0], best[1], m, b/nchw if nchw else None, c))
gm=lambda xs: math.exp(sum(map(math.log,xs))/len(xs))
print("shapes", len(rows), "geomean %.3f"%gm([r[1] for r in rows]), "≥1.0:", sum(r[1]>=1 for r in rows), "worst", min(rows,key=lambda r:r[1])[:3])
print("NCHW user geomean %.3f"%gm([r[4] for r in rows if r[4]]))
big=[r for r in rows if r[3]>=4096]
print("M>=4096:", len(big), "geomean %.3f"%gm([r[1] for r in big]), "below 0.85:", sum(r[1]<0.85 for r in big), "≥1.0:", sum(r[1]>=1 for r in big), "worst", min(big,key=lambda r:r[1])[:3])
print("C<=3: geomean %.3f"%gm([r[1] for r in rows if r[5]<=3]), [round(r[1],2) for r in rows if r[5]<=3])
print(collections.Counter(r[2] for r in rows))
for r in sorted(big,key=lambda r:r[1])[:12]: print("  %-32s %.2f %s M=%d"%(r[0],r[1],r[2],r[3]))
def kind(sh):
    c=int(sh.split('->')[0].split(',')[1]); rs=sh.split('->')[1].split(',')[1].split()[0]
    return 'C<=3' if c<=3 else ('1x1' if rs=='1x1' else 'RS>1,C>3')
for kd in ['1x1','RS>1,C>3','C<=3']:
    xs=[r[1] for r in rows if kind(r[0])==kd]; print(kd, len(xs), "%.2f"%gm(xs))
flag=0
# ALL=1: every shape, worst first.
if __import__('os').environ.get('ALL'):
    for r in sorted(rows,key=lambda r:r[1]): print("  %-36s %.2f %-28s M=%d nchw=%s"%(r[0],r[1],r[2],r[3],"%.2f"%r[4] if r[4] else '-'))

"""Per layer of a depthwise bench JSON (convrs bench --json, uncompressed): the two NCHW kernels'
times (conversion untimed), the better NHWC kernel's, the NCHW caller's route and time against the
best baseline given NCHW, and the geomeans. Usage: python3 dev/depthwise_nchw_compare.py FILE.json"""
import json,sys,math
d=json.load(open(sys.argv[1]))
l1=[];l2=[];lu=[]
for g in d['suites'][0]['groups']:
    ks={k['name']:k['timing']['median_ms']*1000 for k in g['kernels'] if k.get('timing')}
    nb=[c['timing']['median_ms'] for c in (g.get('nchw_cudnn') or []) if c.get('timing')]
    if g.get('nchw_pytorch') and g['nchw_pytorch'].get('timing'): nb.append(g['nchw_pytorch']['timing']['median_ms'])
    base=min(nb)*1000
    u=g['nchw_user']; ut=u['timing']['median_ms']*1000
    a=ks.get('depthwise_nchw'); b=ks.get('depthwise_nchw_strip')
    nh=min(ks.get('depthwise_nhwc',1e9), ks.get('depthwise_nhwc_strip',1e9))
    l1.append(math.log(base/a)); 
    if b: l2.append(math.log(base/min(a,b)))
    lu.append(math.log(base/ut))
    print(f"{g['shape']:34s} nchw {a:6.1f} strip {b if b else 0:6.1f} ({a/b if b else 0:4.2f}x)  nhwc-best {nh:6.1f}  user {ut:6.1f} [{u['name'][:28]:28s}] nchw-base {base:6.1f}  user/base {base/ut:4.2f}")
e=lambda l: math.exp(sum(l)/len(l))
print("geomean vs NCHW base: step1", e(l1), "best nchw kernel", e(l2), "user route", e(lu))

# Per-shape medians (and minima) of `convrs bench --json` files in a folder, with the ratio to the best baseline.
import json,glob,sys,lzma
for f in sorted(glob.glob(sys.argv[1]+'/*.json')+glob.glob(sys.argv[1]+'/*.json.xz')):
    d=json.load(lzma.open(f) if f.endswith('.xz') else open(f))
    for g in d['suites'][0]['groups']:
        t=lambda e: e['timing']['median_ms'] if e and e.get('timing') and e['timing'].get('median_ms') else None
        base=min([t(e) for e in g['cudnn'] if t(e)]+[t(g.get('pytorch')) or 9e9])
        ks={k['name']:(t(k),k['timing'].get('min_ms') if k.get('timing') else None) for k in g['kernels']}
        print(f.split('/')[-1][:8], "%-30s base %.4f "%(g['shape'],base)+"  ".join("%s %.4f/%.4f(%.2fx)"%(n,v,m,base/v) for n,(v,m) in ks.items() if v))

"""Replays Auto's pick for fused layers on measured times, without a GPU: for each layer of a
fused resnet50 fp16 NHWC suite run (bench JSONs of parts 1/2 and 2/2 under DIR; by default the
thirty-fifth session's c3, bias + residual + ReLU), runs `BINARY explain` for the H200 model and
takes the NHWC Hopper kernel it predicts fastest, then prints that kernel's measured time against
the fastest measured one. Valid only while the picked kernel's tile is the one the run measured
(compare `explain`'s launch lines before and after a model change).
Usage: python3 dev/fused_pick_replay.py BINARY [DIR]"""
import json, lzma, math, os, re, subprocess, sys
binary = sys.argv[1]
base = (sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(__file__), '..', 'benchmarks', '2026-11-28-h200-s35', 'c3')) + '/'
algos = ['wgmma_ws_tma_persistent', 'wgmma_ws_tma_pingpong', 'wgmma_ws_tma_pingpong_m64', 'wgmma_ws_tma_splitk']
ratios = []
for part, p in [('1-2', '1of2'), ('2-2', '2of2')]:
    j = json.load(lzma.open(f'{base}suite-resnet50-fp16-{part}/resnet50-fp16-p{p}.json.xz', 'rt'))
    for g in j['suites'][0]['groups']:
        m = re.match(r'(\d+),(\d+),(\d+),(\d+)->(\d+),(\d+)x(\d+) p(\d+)(?: s(\d+))?', g['shape'])
        n, c, h, w, k, r, s, pad, stride = m.groups()
        meas = {x['name']: x['timing']['median_ms'] * 1000 for x in g['kernels'] if x.get('timing') and x.get('passed', True)}
        if not meas:
            continue
        args = [binary, 'explain', '--shape', f'{n},{c},{h},{w},{k},{r},{s}', '--pad', pad, '--stride', stride or '1', '--dtype', 'fp16', '--layout', 'nhwc', '--epilogue', 'bias+residual+relu', '--device-model', 'h200']
        out = subprocess.run(args, capture_output=True, text=True).stdout
        pred = {}
        for line in out.split('\n'):
            cells = [x.strip() for x in line.split('|')]
            if len(cells) > 7 and cells[1] in algos and cells[4] not in ('-', ''):
                pred[cells[1]] = (float(cells[4]), cells[7][:40])
        cand = {a: pred[a] for a in pred if a in meas}
        if not cand:
            continue
        pick = min(cand, key=lambda a: cand[a][0])
        fastest = min(meas, key=meas.get)
        ratios.append(meas[pick] / meas[fastest])
        print(f"{g['shape']:32s} pick {pick:28s} {meas[pick]:6.1f} us  fastest {fastest:28s} {meas[fastest]:6.1f}  {meas[pick]/meas[fastest]:.2f}x  " + ' '.join(f"{a[13:]}={cand[a][0]:.1f}/{meas[a]:.1f}[{cand[a][1][-14:]}]" for a in cand))
print(f"within 10%: {sum(r <= 1.1 for r in ratios)}/{len(ratios)}, geomean pick/fastest {math.exp(sum(map(math.log, ratios))/len(ratios)):.3f}")

# Dev: PyTorch's graph-timed conv2d with the output recycled (each call's output dropped: the
# graph pool hands the same block to the next call) against one output per input set (kept
# alive until the set comes round again), 8 input sets either way, as the bench rotates them.
import sys, torch, torch.nn.functional as F
torch.backends.cudnn.benchmark = True
dt = torch.float16
def timed(sets, keep, calls=24, trials=20):
    outs = [None] * len(sets)
    for xs in sets: F.conv2d(*xs)
    torch.cuda.synchronize()
    side = torch.cuda.Stream(); side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for xs in sets: F.conv2d(*xs)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for i in range(calls):
            y = F.conv2d(*sets[i % len(sets)])
            if keep: outs[i % len(sets)] = y
            del y
    g.replay(); torch.cuda.synchronize()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(trials)]
    g.replay()
    for s, e in ev: s.record(); g.replay(); e.record()
    torch.cuda.synchronize()
    t = sorted(s.elapsed_time(e) * 1000 / calls for s, e in ev)
    del g, outs
    return t[len(t) // 2]
for spec in sys.argv[1:]:
    n, c, h, w, k, r, s = map(int, spec.split(","))
    sets = [(torch.randn(n, c, h, w, device="cuda", dtype=dt).to(memory_format=torch.channels_last), torch.randn(k, c, r, s, device="cuda", dtype=dt).to(memory_format=torch.channels_last)) for _ in range(8)]
    a = timed(sets, False); b = timed(sets, True); a2 = timed(sets, False); b2 = timed(sets, True)
    print(f"{spec}: output recycled {a:.2f} / {a2:.2f} us, one output per set {b:.2f} / {b2:.2f} us")

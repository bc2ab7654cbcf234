# Dev, on the GPU machine: what a CUDA graph of PyTorch's F.conv2d calls holds (the bench's PyTorch
# baseline: cudnn.benchmark on, fp16/bf16 channels_last, graph-timed), node by kind and kernel by
# name, beside its replay time per call; to compare with our cuDNN rows under CONVRS_GRAPH_NODES=1.
# Usage: python3 dev/torch_graph_nodes.py fp16 8,64,56,56,256,1,1 ...
import ctypes, sys
from collections import Counter

import torch
import torch.nn.functional as F

torch.backends.cudnn.benchmark = True
cuda = ctypes.CDLL("libcuda.so.1")
KINDS = {0: "kernel", 1: "memcpy", 2: "memset", 3: "host", 4: "graph", 5: "empty", 6: "wait_event", 7: "event_record"}

def name_of(node):
    # CUDA_KERNEL_NODE_PARAMS_v2: func at 0, kern at 56 (after 7 uints, two pointers).
    buf = (ctypes.c_ubyte * 128)()
    if cuda.cuGraphKernelNodeGetParams_v2(node, buf) != 0:
        return "?"
    func = ctypes.c_void_p.from_buffer(buf, 0).value
    kern = ctypes.c_void_p.from_buffer(buf, 56).value
    name = ctypes.c_char_p()
    if func and cuda.cuFuncGetName(ctypes.byref(name), ctypes.c_void_p(func)) == 0:
        return name.value.decode()
    if kern and cuda.cuKernelGetName(ctypes.byref(name), ctypes.c_void_p(kern)) == 0:
        return name.value.decode()
    return "?"

def nodes(graph):
    n = ctypes.c_size_t(0)
    cuda.cuGraphGetNodes(graph, None, ctypes.byref(n))
    arr = (ctypes.c_void_p * n.value)()
    cuda.cuGraphGetNodes(graph, arr, ctypes.byref(n))
    out = Counter()
    for node in arr:
        kind = ctypes.c_int(-1)
        cuda.cuGraphNodeGetType(ctypes.c_void_p(node), ctypes.byref(kind))
        k = KINDS.get(kind.value, str(kind.value))
        out[f"kernel {name_of(ctypes.c_void_p(node))}" if k == "kernel" else k] += 1
    return out

dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[sys.argv[1]]
print(f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, {torch.cuda.get_device_name()}")
for spec in sys.argv[2:]:
    n, c, h, w, k, r, s = [int(v) for v in spec.split(",")[:7]]
    x = torch.randn(n, c, h, w, device="cuda", dtype=dtype).to(memory_format=torch.channels_last)
    wt = torch.randn(k, c, r, s, device="cuda", dtype=dtype).to(memory_format=torch.channels_last)
    for _ in range(30):
        F.conv2d(x, wt)
    torch.cuda.synchronize()
    calls = 20
    try:
        g = torch.cuda.CUDAGraph(keep_graph=True)
    except TypeError:
        g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(calls):
            F.conv2d(x, wt)
    g.replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(20):
        g.replay()
        start.record(); g.replay(); end.record(); end.synchronize()
        times.append(start.elapsed_time(end) * 1000 / calls)
    times.sort()
    try:
        listed = nodes(ctypes.c_void_p(g.raw_cuda_graph()))
    except Exception as e:  # noqa: BLE001 (a dev aid: say why, go on)
        listed = {f"(no node list: {e})": 1}
    print(f"== {spec} ({sys.argv[1]}): {times[len(times) // 2]:.2f} us a call (graph of {calls}, median of 20)")
    for name, cnt in sorted(listed.items(), key=lambda kv: -kv[1]):
        print(f"   {cnt:4d} x {name[:160]}")

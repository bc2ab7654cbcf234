# Dev, on the GPU machine: the ceilings the bench's figures are read against, timed the way the
# bench times (CUDA graph replays behind a lead replay, per run): an empty kernel (the least a
# convolution launched in a graph can take), an fp16 and a bf16 GEMM through cuBLAS (the matrix
# rate), and a device-to-device copy (bytes read + written per second). Prints JSON.
import json, math, torch, cupy

def graph_ms(fn, target_ms=0.2, trials=30):
    fn(); torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record(); fn(); e.record(); e.synchronize()
    calls = max(8, min(256, math.ceil(target_ms / max(s.elapsed_time(e), 1e-4))))
    side = torch.cuda.Stream(); side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(calls):
            fn()
    g.replay(); torch.cuda.synchronize()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(trials)]
    g.replay()
    for a, b in ev:
        a.record(); g.replay(); b.record()
    torch.cuda.synchronize()
    t = sorted(a.elapsed_time(b) / calls for a, b in ev)
    return t[len(t) // 2]

out = {"gpu": torch.cuda.get_device_name()}
empty = cupy.RawKernel(r'extern "C" __global__ void empty(float* p) { if (p == 0 && threadIdx.x == 7) p[0] = 1.0f; }', "empty")
buf = cupy.zeros(1, dtype=cupy.float32)
def launch(grid):
    stream = cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)
    with stream:
        empty((grid,), (128,), (buf,))
for grid in (1, 132, 1056):
    out[f"empty_kernel_us_grid{grid}"] = 1e3 * graph_ms(lambda: launch(grid))
for name, dt in (("fp16", torch.float16), ("bf16", torch.bfloat16)):
    n = 8192
    a, b = torch.rand(n, n, device="cuda").to(dt), torch.rand(n, n, device="cuda").to(dt)
    ms = graph_ms(lambda: torch.mm(a, b), target_ms=5, trials=10)
    out[f"gemm_{name}_tflops"] = 2 * n**3 / (ms * 1e-3) / 1e12
    del a, b
x = torch.rand(512 << 20, device="cuda", dtype=torch.float16)  # 1 GiB
y = torch.empty_like(x)
ms = graph_ms(lambda: y.copy_(x), target_ms=5, trials=10)
out["copy_gbps_read_plus_write"] = 2 * x.numel() * 2 / (ms * 1e-3) / 1e9
print(json.dumps(out))

# Dev, on the GPU machine: which CUDA kernels PyTorch runs for F.conv2d on the given shapes, as
# the bench's PyTorch baseline calls it (cudnn.benchmark on, fp16/bf16 channels_last), and their
# device time (torch.profiler, 50 calls after warm-up). Shapes: "N,C,H,W,K,R,S[,pad,stride,groups]".
# Usage: python3 dev/torch_kernels.py fp16 8,64,56,56,256,1,1 16,512,7,7,2048,1,1 ...
import sys
from collections import defaultdict

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

torch.backends.cudnn.benchmark = True
dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[sys.argv[1]]
print(f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, {torch.cuda.get_device_name()}")
for spec in sys.argv[2:]:
    f = [int(v) for v in spec.split(",")]
    n, c, h, w, k, r, s = f[:7]
    pad, stride, groups = (f[7:] + [0, 1, 1][len(f[7:]):])[:3]
    x = torch.randn(n, c, h, w, device="cuda", dtype=dtype).to(memory_format=torch.channels_last)
    wt = torch.randn(k, c // groups, r, s, device="cuda", dtype=dtype).to(memory_format=torch.channels_last)
    for _ in range(30):
        F.conv2d(x, wt, None, stride, pad, 1, groups)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(50):
            F.conv2d(x, wt, None, stride, pad, 1, groups)
        torch.cuda.synchronize()
    per = defaultdict(lambda: [0, 0.0])
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            per[e.name][0] += 1
            per[e.name][1] += e.device_time_total if hasattr(e, "device_time_total") else e.cuda_time_total
    print(f"== {spec} ({sys.argv[1]})")
    for name, (cnt, us) in sorted(per.items(), key=lambda kv: -kv[1][1]):
        print(f"   {cnt:4d} calls  {us / max(cnt, 1):8.2f} us avg  {name[:200]}")

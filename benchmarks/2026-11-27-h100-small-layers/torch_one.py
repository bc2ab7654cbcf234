# One convolution through PyTorch (cuDNN, benchmark mode), warmed up, then once inside
# cudaProfilerStart/Stop so that `ncu --profile-from-start off` sees only the timed call.
# Args: N,C,H,W,K,R,S pad stride groups layout(nchw|nhwc) dtype(fp16|bf16)
import sys, torch
import torch.nn.functional as F
n, c, h, w, k, r, s = map(int, sys.argv[1].split(','))
pad, stride, groups = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
fmt = torch.channels_last if sys.argv[5] == 'nhwc' else torch.contiguous_format
dt = {'fp16': torch.half, 'bf16': torch.bfloat16}[sys.argv[6]]
torch.backends.cudnn.benchmark = True
x = torch.randn(n, c, h, w, device='cuda', dtype=dt).to(memory_format=fmt)
wt = torch.randn(k, c // groups, r, s, device='cuda', dtype=dt).to(memory_format=fmt)
for _ in range(30):
    y = F.conv2d(x, wt, None, stride, pad, 1, groups)
torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStart()
y = F.conv2d(x, wt, None, stride, pad, 1, groups)
torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStop()

# Dev, on the GPU machine: ncu of our kernel and of the cuDNN kernel PyTorch runs (cudnn.benchmark
# on, the timed call inside an NVTX range) on SHAPES, fp16 NHWC. Each of SHAPES is
# shape:pad:stride:algo[:groups]; groups = C is a depthwise layer (`--groups`, PyTorch's
# `groups=`). SECTIONS: ncu's sections (default Speed of Light, launch statistics, occupancy,
# warp states). BUNDLE: the bundle directory (target/gpu-bundle). Logs under $OUT/ncu-*.txt.
set -u
b=$(mktemp -d); tar -C $b -xJf ${BUNDLE:-target/gpu-bundle}/payload.tar.xz
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu)
sections=${SECTIONS:---section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats}
for s in ${SHAPES:-16,2048,7,7,512,1,1:0:1:wgmma_ws_tma_splitk 8,3,108,108,64,3,3:1:2:wmma_patch}; do
  IFS=: read shape pad stride algo groups <<<"$s"
  groups=${groups:-1}
  tag=$(echo $shape | tr , _)_g$groups
  $ncu --clock-control none $sections --launch-skip 3 --launch-count 1 \
    $b/convrs run --algo $algo --dtype fp16 --layout nhwc --shape $shape --pad $pad --stride $stride --groups $groups --timing events --runs 1 > $OUT/ncu-ours-$tag.txt 2>&1
  IFS=, read n c h w k r q <<<"$shape"
  $ncu --clock-control none $sections --nvtx --nvtx-include "timed/" \
    python3 -c "
import torch, torch.nn.functional as F
torch.backends.cudnn.benchmark = True
x = torch.rand($n, $c, $h, $w, device='cuda').half().contiguous(memory_format=torch.channels_last)
wt = torch.rand($k, $c // $groups, $r, $q, device='cuda').half().contiguous(memory_format=torch.channels_last)
for _ in range(5): F.conv2d(x, wt, padding=$pad, stride=$stride, groups=$groups)
torch.cuda.synchronize(); torch.cuda.nvtx.range_push('timed'); F.conv2d(x, wt, padding=$pad, stride=$stride, groups=$groups); torch.cuda.nvtx.range_pop(); torch.cuda.synchronize()
" > $OUT/ncu-cudnn-$tag.txt 2>&1
  for f in $OUT/ncu-ours-$tag.txt $OUT/ncu-cudnn-$tag.txt; do echo "== $f"; grep -E "^  [a-zA-Z_0-9]+.*\(|Duration|Memory Throughput|Compute \(SM\) Throughput|DRAM Throughput|Grid Size|Block Size|Registers Per|Achieved Occupancy|Theoretical Occupancy|Warp Cycles Per Issued|No Eligible" $f | head -16; done
done

# Dev, on the GPU machine: ncu (Speed of Light, launch statistics) of our kernel and of the cuDNN
# kernel PyTorch runs (cudnn.benchmark on, the timed call inside an NVTX range) on SHAPES, fp16
# NHWC. Logs under $OUT/ncu-*.txt.
set -u
b=$(mktemp -d); tar -C $b -xJf target/gpu-bundle/payload.tar.xz
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu)
for s in ${SHAPES:-16,2048,7,7,512,1,1:0:1:wgmma_ws_tma_splitk 8,3,108,108,64,3,3:1:2:wmma_patch}; do
  IFS=: read shape pad stride algo <<<"$s"
  tag=$(echo $shape | tr , _)
  $ncu --clock-control none --section SpeedOfLight --section LaunchStats --section Occupancy --launch-skip 3 --launch-count 1 \
    $b/convrs run --algo $algo --dtype fp16 --shape $shape --pad $pad --stride $stride --timing events --runs 1 > $OUT/ncu-ours-$tag.txt 2>&1
  IFS=, read n c h w k r q <<<"$shape"
  $ncu --clock-control none --section SpeedOfLight --section LaunchStats --section Occupancy --nvtx --nvtx-include "timed/" \
    python3 -c "
import torch, torch.nn.functional as F
torch.backends.cudnn.benchmark = True
x = torch.rand($n, $c, $h, $w, device='cuda').half().contiguous(memory_format=torch.channels_last)
wt = torch.rand($k, $c, $r, $q, device='cuda').half().contiguous(memory_format=torch.channels_last)
for _ in range(5): F.conv2d(x, wt, padding=$pad, stride=$stride)
torch.cuda.synchronize(); torch.cuda.nvtx.range_push('timed'); F.conv2d(x, wt, padding=$pad, stride=$stride); torch.cuda.nvtx.range_pop(); torch.cuda.synchronize()
" > $OUT/ncu-cudnn-$tag.txt 2>&1
  for f in $OUT/ncu-ours-$tag.txt $OUT/ncu-cudnn-$tag.txt; do echo "== $f"; grep -E "^  [a-zA-Z_0-9]+.*\(|Duration|Memory Throughput|Compute \(SM\) Throughput|DRAM Throughput|Grid Size|Registers Per|Achieved Occupancy|Theoretical Occupancy" $f | head -14; done
done

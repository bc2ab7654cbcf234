# Dev, on the GPU machine, one call: a bench of SETS ("suite:dtype:part"..., default resnet50
# bf16) into $OUT/NAME, with step 16 among the ten kernels (bundle g2). The fourth call ran it as
# is; the fifth as NAME=deepbench-p1 SETS="deepbench:fp16:1/3" TIMEOUT=230.
set -u
cd "$(dirname "$0")/../.."
export BUNDLE=${BUNDLE:-target/gpu-g2}
. benchmarks/2026-11-28-h100-fold/steps.sh
A="wgmma_nchw1x1_persistent wgmma_nchw1x1_pingpong_m64 wgmma_ws_tma_persistent wgmma_ws_tma_pingpong wgmma_ws_tma_pingpong_m64 wgmma_ws_tma_splitk wmma_patch wgmma_ws_tma_persistent_to_nchw wgmma_ws_tma_pingpong_to_nchw wgmma_ws_tma_pingpong_m64_to_nchw"
step ${NAME:-bench-bf16} MODE=bench "ALGOS=$A" "BENCH_SETS=${SETS:-resnet50:bf16:1/2 resnet50:bf16:2/2}" BENCH_TIMEOUT=${TIMEOUT:-165}

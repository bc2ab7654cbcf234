# Dev, on the GPU machine, one call (thirtieth session, bundle h3): deepbench fp16 parts 2 and
# 3 (owed since the twenty-ninth session) with the eleven kernels, step 17 among them.
set -u
cd "$(dirname "$0")/../.."
export BUNDLE=${BUNDLE:-target/gpu-h3}
. benchmarks/2026-11-28-h100-fold/steps.sh
A="wgmma_nchw1x1_persistent wgmma_nchw1x1_pingpong_m64 wgmma_ws_tma_persistent wgmma_ws_tma_pingpong wgmma_ws_tma_pingpong_m64 wgmma_ws_tma_splitk wmma_patch wgmma_ws_tma_persistent_to_nchw wgmma_ws_tma_pingpong_to_nchw wgmma_ws_tma_pingpong_m64_to_nchw wgmma_nchw_patch_persistent"
for set in ${SETS:-deepbench:fp16:2/3 deepbench:fp16:3/3}; do
  step "bench-${set//[:\/]/-}" MODE=bench "ALGOS=$A" "BENCH_SETS=$set" BENCH_TIMEOUT=${TIMEOUT:-240}
done

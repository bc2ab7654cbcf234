# Dev, on the GPU machine, one call (thirty-first session, bundle s31b or later): the suites
# SETS ("suite:dtype:part" ...) with the eleven kernels of the thirtieth session (step 17 among
# them), after the warm-up and smoke. Outputs tarred as they go.
set -u
cd "$(dirname "$0")/../.."
export BUNDLE=${BUNDLE:-target/gpu-s31b}
. benchmarks/2026-11-28-h100-fold/steps.sh
. benchmarks/2026-11-28-h100-s30/smoke.sh
A="wgmma_nchw1x1_persistent wgmma_nchw1x1_pingpong_m64 wgmma_ws_tma_persistent wgmma_ws_tma_pingpong wgmma_ws_tma_pingpong_m64 wgmma_ws_tma_splitk wmma_patch wgmma_ws_tma_persistent_to_nchw wgmma_ws_tma_pingpong_to_nchw wgmma_ws_tma_pingpong_m64_to_nchw wgmma_nchw_patch_persistent"
for set in $SETS; do
  step "bench-${set//[:\/]/-}" MODE=bench "ALGOS=$A" "BENCH_SETS=$set" BENCH_TIMEOUT=${TIMEOUT:-240}
done

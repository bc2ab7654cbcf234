# Dev, on the GPU machine, one call (thirty-first session, bundle s31d): bf16 suites owed since
# the twenty-ninth session, the NCHW caller against NCHW baselines, with the ten kernels of the
# twenty-ninth session (step 17 left out: its whole-plane path was not landed, and every other
# entry's PTX in s31d is byte-identical to the landed afc91f3's; EXTRA: more kernels). Outputs
# tarred as they go.
set -u
cd "$(dirname "$0")/../.."
export BUNDLE=${BUNDLE:-target/gpu-s31d}
. benchmarks/2026-11-28-h100-fold/steps.sh
. benchmarks/2026-11-28-h100-s30/smoke.sh
A="wgmma_nchw1x1_persistent wgmma_nchw1x1_pingpong_m64 wgmma_ws_tma_persistent wgmma_ws_tma_pingpong wgmma_ws_tma_pingpong_m64 wgmma_ws_tma_splitk wmma_patch wgmma_ws_tma_persistent_to_nchw wgmma_ws_tma_pingpong_to_nchw wgmma_ws_tma_pingpong_m64_to_nchw ${EXTRA:-}"
for set in ${SETS:-resnet50:bf16:1/2 resnet50:bf16:2/2 deepbench:bf16:1/3}; do
  step "bench-${set//[:\/]/-}" MODE=bench "ALGOS=$A" "BENCH_SETS=$set" BENCH_TIMEOUT=${TIMEOUT:-230}
done

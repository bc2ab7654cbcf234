# Dev, on the GPU machine, one call (thirtieth session, bundle h3): step 17 with two landings,
# 4 filter stages and two transposes in flight: warm-up, smoke, gpu_wgmma restricted to it,
# sanitizers on one problem, the kernel alone against step 7 (L2-warm `convrs run`), ncu on
# 32,64,56,56->64, and the resnet50 fp16 part 1 bench with it among the kernels. Outputs tarred as they go.
set -u
cd "$(dirname "$0")/../.."
export BUNDLE=${BUNDLE:-target/gpu-h3}
. benchmarks/2026-11-28-h100-fold/steps.sh
. benchmarks/2026-11-28-h100-s30/smoke.sh
step tests CONVRS_TEST_KERNELS=$P MODE=tests "TESTS=gpu_wgmma" TEST_TIMEOUT=200
step san MODE=sanitize SAN_LAYOUT=nchw TOOLS="memcheck racecheck" "SAN_SPECS=$P:fp16:fma:2,24,16,20,40,3,3 --pad 2 --dilation 2"
S="32,64,56,56,64,3,3 --pad 1;32,128,28,28,128,3,3 --pad 1;16,256,28,28,256,3,3 --pad 1;8,512,28,28,512,3,3 --pad 1;16,64,56,56,128,3,3 --pad 1"
step runs MODE=runs "RUN_ALGOS=wgmma_ws_tma_persistent $P" RUN_LAYOUT=nchw "RUN_SHAPES=$S"
step ncu MODE=ncu NCU_ALGO=$P NCU_SHAPE="32,64,56,56,64,3,3 --pad 1" NCU_LAYOUT=nchw NCU_KERNEL=patch
A="wgmma_nchw1x1_persistent wgmma_nchw1x1_pingpong_m64 wgmma_ws_tma_persistent wgmma_ws_tma_pingpong wgmma_ws_tma_pingpong_m64 wgmma_ws_tma_splitk wmma_patch wgmma_ws_tma_persistent_to_nchw wgmma_ws_tma_pingpong_to_nchw wgmma_ws_tma_pingpong_m64_to_nchw $P"
step bench MODE=bench "ALGOS=$A" BENCH_SETS="${SETS:-resnet50:fp16:1/2}" BENCH_TIMEOUT=150

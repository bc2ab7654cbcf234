# Dev, on the GPU machine, one call (thirtieth session, bundle h4): step 17's 128x64 tile with
# 8 filter stages: warm-up, smoke, gpu_wgmma restricted to step 17, the kernel alone against
# step 7 on K = 64 layers (L2-warm `convrs run`). Outputs tarred as they go.
set -u
cd "$(dirname "$0")/../.."
export BUNDLE=${BUNDLE:-target/gpu-h4}
. benchmarks/2026-11-28-h100-fold/steps.sh
. benchmarks/2026-11-28-h100-s30/smoke.sh
step tests CONVRS_TEST_KERNELS=$P MODE=tests "TESTS=gpu_wgmma" TEST_TIMEOUT=200
S="32,64,56,56,64,3,3 --pad 1;16,64,56,56,64,3,3 --pad 1;8,64,56,56,64,3,3 --pad 1;16,32,28,28,64,3,3 --pad 1"
step runs MODE=runs "RUN_ALGOS=wgmma_ws_tma_persistent $P" RUN_LAYOUT=nchw "RUN_SHAPES=$S"

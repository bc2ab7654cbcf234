# Dev, on the GPU machine, one call: step 16 with its staged NCHW stores (bundle target/gpu-g2):
# its tests, the ping-pong entries whose PTX changed in one branch's layout (named shapes, fused
# epilogues), sanitizers on the staged stores, the kernel A/B against the NHWC twins, resnet50.
set -u
cd "$(dirname "$0")/../.."
export BUNDLE=${BUNDLE:-target/gpu-g2}
. benchmarks/2026-11-28-h100-fold/steps.sh
NEW=wgmma_ws_tma_persistent_to_nchw,wgmma_ws_tma_pingpong_to_nchw,wgmma_ws_tma_pingpong_m64_to_nchw
CHANGED=wgmma_ws_tma_pingpong,wgmma_ws_tma_pingpong_m64,wgmma_ws_tma_pingpong_tf32,wgmma_ws_tma_pingpong_m64_tf32,wgmma_nchw1x1_pingpong_m64
step tests CONVRS_TEST_KERNELS=$NEW MODE=tests "TESTS=gpu_wgmma gpu_device_tensor" TEST_TIMEOUT=240
step tests-changed CONVRS_TEST_KERNELS=$CHANGED MODE=tests TESTS=gpu_wgmma TEST_FILTER=named_shapes TEST_TIMEOUT=150
step epilogue-changed CONVRS_TEST_KERNELS=$CHANGED MODE=tests TESTS=gpu_epilogue TEST_TIMEOUT=150
step san MODE=sanitize SAN_LAYOUT=nchw "SAN_SPECS=wgmma_ws_tma_pingpong_m64_to_nchw:fp16:fma:3,24,13,11,40,3,3 --pad 1;wgmma_ws_tma_persistent_to_nchw:bf16:fma:2,16,10,12,72,3,3 --pad 1;wgmma_ws_tma_pingpong_to_nchw:fp16:fma:2,64,14,14,136,1,1"
S="16,256,14,14,256,1,1;8,256,14,14,1024,1,1;32,64,56,56,64,3,3 --pad 1;8,64,112,112,128,3,3 --pad 1;32,32,79,341,32,5,10 --stride 2"
step runs MODE=runs "RUN_ALGOS=wgmma_ws_tma_persistent wgmma_ws_tma_persistent_to_nchw wgmma_ws_tma_pingpong wgmma_ws_tma_pingpong_to_nchw wgmma_ws_tma_pingpong_m64 wgmma_ws_tma_pingpong_m64_to_nchw" RUN_LAYOUT=nchw "RUN_SHAPES=$S"
A="wgmma_nchw1x1_persistent wgmma_nchw1x1_pingpong_m64 wgmma_ws_tma_persistent wgmma_ws_tma_pingpong wgmma_ws_tma_pingpong_m64 wgmma_ws_tma_splitk wmma_patch wgmma_ws_tma_persistent_to_nchw wgmma_ws_tma_pingpong_to_nchw wgmma_ws_tma_pingpong_m64_to_nchw"
step bench MODE=bench "ALGOS=$A" BENCH_SETS="resnet50:fp16:1/2 resnet50:fp16:2/2" BENCH_TIMEOUT=170

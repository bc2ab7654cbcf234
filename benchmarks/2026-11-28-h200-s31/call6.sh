# Dev, on the GPU machine, one call (thirty-first session, bundle s31e): step 18,
# `wgmma_nchw1x1_pingpong` (step 9 on 128-row ping-pong tiles). Warm-up and smoke (s30's), a
# step 18 smoke, gpu_wgmma and gpu_epilogue restricted to it, the sanitizers on two problems,
# the kernel alone against steps 9 and 15 on the NCHW 1x1 layers below 0.9x (L2-warm `convrs
# run`), then the nchw-1x1 suite (fp16) with the plane kernels and the routes that ran those
# layers before. Outputs tarred as they go.
set -u
cd "$(dirname "$0")/../.."
export BUNDLE=${BUNDLE:-target/gpu-s31e}
. benchmarks/2026-11-28-h100-fold/steps.sh
. benchmarks/2026-11-28-h100-s30/smoke.sh
N=wgmma_nchw1x1_pingpong
mkdir -p $R/w/smoke
CONVRS_REQUIRE_GPU=1 timeout 30 $b/convrs run --algo $N --dtype fp16 --layout nchw --shape 2,128,28,28,512,1,1 --runs 5 > $R/w/smoke/step18.txt 2>&1; rc=$?
echo "step 18 smoke rc=$rc"; grep -E "^time|^check|rror" $R/w/smoke/step18.txt | head -3; pack
[ $rc = 0 ] || exit 1
step tests CONVRS_TEST_KERNELS=$N MODE=tests "TESTS=gpu_wgmma gpu_epilogue" TEST_TIMEOUT=200
step san MODE=sanitize "SAN_SPECS=$N:fp16:fma:3,136,20,20,200,1,1;$N:bf16:fma:2,64,28,28,64,1,1"
S="32,128,28,28,512,1,1;16,128,28,28,512,1,1;32,512,28,28,256,1,1;16,64,56,56,256,1,1;8,64,56,56,256,1,1;8,256,56,56,64,1,1"
step runs MODE=runs "RUN_ALGOS=$N wgmma_nchw1x1_persistent wgmma_nchw1x1_pingpong_m64" RUN_LAYOUT=nchw "RUN_SHAPES=$S"
A="$N wgmma_nchw1x1_persistent wgmma_nchw1x1_pingpong_m64 wgmma_ws_tma_pingpong_m64 wgmma_ws_tma_pingpong_m64_to_nchw wgmma_ws_tma_pingpong_to_nchw"
step bench MODE=bench "ALGOS=$A" "BENCH_SETS=dev/suites/nchw-1x1.csv:fp16" BENCH_TIMEOUT=${TIMEOUT:-200}

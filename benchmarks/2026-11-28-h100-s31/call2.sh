# Dev, on the GPU machine, one call (thirty-first session, bundle s31b): step 17 on planes by
# the octet map (14x14, 7x7). Warm-up and smoke (s30's), an octet-map smoke, gpu_wgmma
# restricted to step 17, the sanitizers on two octet-map problems, the kernel alone (L2-warm
# `convrs run`; step 12 on NHWC data in c1), then the small-planes suite (fp16) with step 17
# and the kernels that ran those layers before. Outputs tarred as they go.
set -u
cd "$(dirname "$0")/../.."
export BUNDLE=${BUNDLE:-target/gpu-s31b}
. benchmarks/2026-11-28-h100-fold/steps.sh
. benchmarks/2026-11-28-h100-s30/smoke.sh
mkdir -p $R/w/smoke
CONVRS_REQUIRE_GPU=1 timeout 30 $b/convrs run --algo $P --dtype fp16 --layout nchw --shape 2,256,14,14,256,1,1 --runs 5 > $R/w/smoke/octets.txt 2>&1; rc=$?
echo "octet smoke rc=$rc"; grep -E "^time|^check|rror" $R/w/smoke/octets.txt | head -3; pack
[ $rc = 0 ] || exit 1
step tests CONVRS_TEST_KERNELS=$P MODE=tests "TESTS=gpu_wgmma" TEST_TIMEOUT=240
step san MODE=sanitize "SAN_SPECS=$P:fp16:fma:3,200,7,7,136,1,1;$P:bf16:fma:2,72,15,17,40,3,3 --pad 1"
S="16,256,14,14,256,1,1;16,512,7,7,512,1,1;16,1024,14,14,256,1,1;16,256,14,14,256,3,3 --pad 1;8,512,7,7,512,3,3 --pad 1"
step runs MODE=runs "RUN_ALGOS=$P" RUN_LAYOUT=nchw "RUN_SHAPES=$S"
# (the NHWC kernels alone on these shapes: c1)
A="$P wgmma_ws_tma_persistent wgmma_ws_tma_pingpong wgmma_ws_tma_pingpong_m64 wgmma_ws_tma_splitk wgmma_ws_tma_persistent_to_nchw wgmma_ws_tma_pingpong_to_nchw wgmma_ws_tma_pingpong_m64_to_nchw"
step bench MODE=bench "ALGOS=$A" "BENCH_SETS=dev/suites/small-planes.csv:fp16" BENCH_TIMEOUT=${TIMEOUT:-300}

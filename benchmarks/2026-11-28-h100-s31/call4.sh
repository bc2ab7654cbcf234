# Dev, on the GPU machine, one call (thirty-first session, bundle s31d): step 17 on whole
# planes (c1's bulk copies; 14x14 by quads of pixels). Warm-up and smoke (s30's), a whole-plane smoke, gpu_wgmma
# restricted to step 17, the sanitizers on three whole-plane problems (quads on 10x10), the kernel alone (L2-warm
# `convrs run`; step 12 on NHWC data in c1), then the small-planes suite (fp16) with step 17
# and the kernels that ran those layers before. Outputs tarred as they go.
set -u
cd "$(dirname "$0")/../.."
export BUNDLE=${BUNDLE:-target/gpu-s31d}
. benchmarks/2026-11-28-h100-fold/steps.sh
. benchmarks/2026-11-28-h100-s30/smoke.sh
mkdir -p $R/w/smoke
CONVRS_REQUIRE_GPU=1 timeout 30 $b/convrs run --algo $P --dtype fp16 --layout nchw --shape 2,256,14,14,256,1,1 --runs 5 > $R/w/smoke/whole.txt 2>&1; rc=$?
echo "whole smoke rc=$rc"; grep -E "^time|^check|rror" $R/w/smoke/whole.txt | head -3; pack
[ $rc = 0 ] || exit 1
step tests CONVRS_TEST_KERNELS=$P MODE=tests "TESTS=gpu_wgmma" TEST_TIMEOUT=240
step san MODE=sanitize "SAN_SPECS=$P:fp16:fma:3,200,7,7,136,1,1;$P:bf16:fma:2,72,15,17,40,3,3 --pad 1;$P:fp16:fma:5,64,10,10,64,5,5 --pad 2"
S="16,256,14,14,256,1,1;16,512,7,7,512,1,1;16,1024,14,14,256,1,1;16,256,14,14,256,3,3 --pad 1;8,512,7,7,512,3,3 --pad 1"
step runs MODE=runs "RUN_ALGOS=$P" RUN_LAYOUT=nchw "RUN_SHAPES=$S"
# (the NHWC kernels alone on these shapes: c1)
A="$P wgmma_ws_tma_persistent wgmma_ws_tma_pingpong wgmma_ws_tma_pingpong_m64 wgmma_ws_tma_splitk wgmma_ws_tma_persistent_to_nchw wgmma_ws_tma_pingpong_to_nchw wgmma_ws_tma_pingpong_m64_to_nchw"
# The suite only if step 17 beats the NCHW caller's route of c1 (7.6 us) on 16,256,14,14->256.
t=$(tar -xOf $R/all.tar runs/runs.txt | grep "\[16,256,14,14,256,1,1\]" | grep -oE "[0-9]+\.[0-9]+ ms" | head -1 | cut -d' ' -f1)
echo "step 17 on 16,256,14,14->256: ${t:-none} ms"
awk -v t="${t:-1}" 'BEGIN { exit !(t < 0.0075) }' || exit 0
step bench MODE=bench "ALGOS=$A" "BENCH_SETS=dev/suites/small-planes.csv:fp16" BENCH_TIMEOUT=${TIMEOUT:-300}

# Dev, on the GPU machine, one call (thirty-first session; BUNDLE required): step 17 on NCHW
# planes TMA cannot step (14x14, 7x7; notes/hopper.md section 25). Warm-up and smoke (s30's),
# a smoke on 2,256,14,14->256 1x1, gpu_wgmma restricted to step 17, the sanitizers on two
# problems (SAN3=1: a third, a 5x5 filter on 10x10 planes), the kernel alone (L2-warm `convrs
# run`; NHWC_RUNS=1: steps 12 and 7 on NHWC data too), then the small-planes suite (fp16) with
# step 17 and the kernels that ran those layers before (GATE=1: only if step 17 beats c1's
# NCHW caller route, 7.6 us, on 16,256,14,14->256). Outputs tarred as they go.
set -u
cd "$(dirname "$0")/../.."
export BUNDLE
. benchmarks/2026-11-28-h100-fold/steps.sh
. benchmarks/2026-11-28-h100-s30/smoke.sh
mkdir -p $R/w/smoke
CONVRS_REQUIRE_GPU=1 timeout 30 $b/convrs run --algo $P --dtype fp16 --layout nchw --shape 2,256,14,14,256,1,1 --runs 5 > $R/w/smoke/whole.txt 2>&1; rc=$?
echo "whole smoke rc=$rc"; grep -E "^time|^check|rror" $R/w/smoke/whole.txt | head -3; pack
[ $rc = 0 ] || exit 1
step tests CONVRS_TEST_KERNELS=$P MODE=tests "TESTS=gpu_wgmma" TEST_TIMEOUT=240
SAN="$P:fp16:fma:3,200,7,7,136,1,1;$P:bf16:fma:2,72,15,17,40,3,3 --pad 1"
[ "${SAN3:-0}" = 1 ] && SAN="$SAN;$P:fp16:fma:5,64,10,10,64,5,5 --pad 2"
step san MODE=sanitize "SAN_SPECS=$SAN"
S="16,256,14,14,256,1,1;16,512,7,7,512,1,1;16,1024,14,14,256,1,1;16,256,14,14,256,3,3 --pad 1;8,512,7,7,512,3,3 --pad 1"
step runs MODE=runs "RUN_ALGOS=$P" RUN_LAYOUT=nchw "RUN_SHAPES=$S"
[ "${NHWC_RUNS:-0}" = 1 ] && step runs-nhwc MODE=runs "RUN_ALGOS=wgmma_ws_tma_pingpong_m64 wgmma_ws_tma_persistent" RUN_LAYOUT=nhwc "RUN_SHAPES=$S"
A="$P wgmma_ws_tma_persistent wgmma_ws_tma_pingpong wgmma_ws_tma_pingpong_m64 wgmma_ws_tma_splitk wgmma_ws_tma_persistent_to_nchw wgmma_ws_tma_pingpong_to_nchw wgmma_ws_tma_pingpong_m64_to_nchw"
if [ "${GATE:-0}" = 1 ]; then
  t=$(tar -xOf $R/all.tar runs/runs.txt | grep "\[16,256,14,14,256,1,1\]" | grep -oE "[0-9]+\.[0-9]+ ms" | head -1 | cut -d' ' -f1)
  echo "step 17 on 16,256,14,14->256: ${t:-none} ms"
  awk -v t="${t:-1}" 'BEGIN { exit !(t < 0.0075) }' || exit 0
fi
step bench MODE=bench "ALGOS=$A" "BENCH_SETS=dev/suites/small-planes.csv:fp16" BENCH_TIMEOUT=${TIMEOUT:-300}

# Dev, on the GPU machine, one call (thirtieth session, bundle h2): step 17
# (wgmma_nchw_patch_persistent) smoke-run, tested, sanitized, timed against step 7 (kernel
# alone), and the resnet50 fp16 bench with it among the kernels; step 16's entries (their PTX
# changed: store_nchw generic) re-tested. Outputs tarred as they go.
# As run first, the smoke runs had 30 s each and both timed out: the first `convrs run` on a
# fresh machine also JIT-compiles the sm_80 and sm_90 modules (the tests after them passed).
# Rerun as call 3 with a warm-up run first and STEP16=0 (step 16's tests had passed).
set -u
cd "$(dirname "$0")/../.."
export BUNDLE=${BUNDLE:-target/gpu-h2}
. benchmarks/2026-11-28-h100-fold/steps.sh
b=$(mktemp -d); tar -C $b -xJf $BUNDLE/payload.tar.xz
mkdir -p $R/w/smoke
P=wgmma_nchw_patch_persistent
ok=1
# A known kernel first, with time for the modules' JIT on a fresh machine.
CONVRS_REQUIRE_GPU=1 timeout 150 $b/convrs run --algo wgmma_ws_tma_persistent --dtype fp16 --layout nhwc --shape 2,64,56,56,64,3,3 --pad 1 --runs 5 > $R/w/smoke/warm.txt 2>&1; echo "warm-up rc=$?"
for s in "2,64,56,56,64,3,3 --pad 1" "1,128,28,28,200,3,3 --pad 1"; do
  CONVRS_REQUIRE_GPU=1 timeout ${SMOKE_TIMEOUT:-30} $b/convrs run --algo $P --dtype fp16 --layout nchw --shape $s --runs 5 > $R/w/smoke/run-${s%%,*}.txt 2>&1; rc=$?
  echo "smoke [$s] rc=$rc"; grep -E "^time|^check|^rel L2|rror" $R/w/smoke/run-${s%%,*}.txt | head -5
  [ $rc = 0 ] || ok=0
done
pack
NEW16=wgmma_ws_tma_persistent_to_nchw,wgmma_ws_tma_pingpong_to_nchw,wgmma_ws_tma_pingpong_m64_to_nchw
if [ $ok = 1 ]; then K=$P,$NEW16; else K=$NEW16; fi
[ "${STEP16:-1}" = 0 ] && K=$P
[ "${STEP16:-1}" = 0 ] && [ $ok = 0 ] && exit 1
step tests CONVRS_TEST_KERNELS=$K MODE=tests "TESTS=gpu_wgmma gpu_device_tensor" TEST_TIMEOUT=240
if [ $ok = 1 ]; then
  step san MODE=sanitize SAN_LAYOUT=nchw "SAN_SPECS=$P:fp16:fma:2,24,16,20,40,3,3 --pad 2 --dilation 2;$P:bf16:fma:1,136,12,24,8,7,7 --pad 3"
  S="32,64,56,56,64,3,3 --pad 1;32,128,28,28,128,3,3 --pad 1;8,64,112,112,128,3,3 --pad 1;16,256,28,28,256,3,3 --pad 1;1,128,128,128,128,3,3 --pad 1;8,512,28,28,512,3,3 --pad 1"
  step runs MODE=runs "RUN_ALGOS=wgmma_ws_tma_persistent $P" RUN_LAYOUT=nchw "RUN_SHAPES=$S"
  A="wgmma_nchw1x1_persistent wgmma_nchw1x1_pingpong_m64 wgmma_ws_tma_persistent wgmma_ws_tma_pingpong wgmma_ws_tma_pingpong_m64 wgmma_ws_tma_splitk wmma_patch wgmma_ws_tma_persistent_to_nchw wgmma_ws_tma_pingpong_to_nchw wgmma_ws_tma_pingpong_m64_to_nchw $P"
  step bench MODE=bench "ALGOS=$A" BENCH_SETS="resnet50:fp16:1/2" BENCH_TIMEOUT=150
fi

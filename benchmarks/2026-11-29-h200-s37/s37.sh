# Device script of the thirty-seventh session, run from the repository root with BUNDLE set:
# `bash benchmarks/2026-11-29-h200-s37/s37.sh PART...`. PART: jit (convrs info once, so no timed
# run pays the PTX JIT), small (convrs run, the planner's tiles, on deepbench's small layers with
# EPIS, each Hopper NHWC kernel), ncu (NCU_ALGO on NCU_SHAPE, bare then with NCU_EPI), tests
# (TESTS), sanitize7 (step 7's residual by TMA at SAN_WIDTHS), suites (SETS with EPI, the NHWC
# Hopper kernels or SUITE_ALGOS, SUITE_ARGS), patch (wmma_patch's fused epilogue: tests,
# sanitizer, runs), bench (the bench on SET for each of BUNDLES). Results go to $OUT/all.tar through the fold directory's steps.sh.
source benchmarks/2026-11-28-h100-fold/steps.sh
export CUDA_CACHE_MAXSIZE=4294967296
S="8,256,14,14,256,1,1;8,128,28,28,512,1,1 --stride 2;16,256,14,14,1024,1,1 --stride 2;16,32,12,120,64,3,3 --pad 1;8,128,14,14,256,3,3 --pad 1"
A="wgmma_ws_tma_persistent wgmma_ws_tma_pingpong wgmma_ws_tma_pingpong_m64 wgmma_ws_tma_splitk"
for part in "$@"; do
case $part in
jit)
  b=$(mktemp -d); tar -C $b -xJf $BUNDLE/payload.tar.xz
  CONVRS_REQUIRE_GPU=1 timeout 240 $b/convrs info > $R/w/jit-$(basename $BUNDLE).txt 2>&1; echo "jit $BUNDLE rc=$?";;
small)
  for epi in ${EPIS:-none bias+relu bias+residual+relu}; do
    step small-$(basename $BUNDLE)-${epi//+/_} MODE=runs RUN_DTYPE=fp16 RUN_LAYOUT=nhwc "RUN_SHAPES=${SMALL_SHAPES:-$S}" WIDTHS="-" \
      "RUN_ALGOS=${SMALL_ALGOS:-$A}" "RUN_ARGS=--epilogue $epi"
  done;;
ncu)
  for epi in none ${NCU_EPI:-bias+residual+relu}; do
    step ncu-${epi//+/_} MODE=ncu NCU_ALGO=${NCU_ALGO:-wgmma_ws_tma_pingpong_m64} "NCU_SHAPE=${NCU_SHAPE:-8,256,14,14,256,1,1} --epilogue $epi" NCU_LAYOUT=nhwc NCU_LINES=40
  done;;
tests)
  b=$(mktemp -d); tar -C $b -xJf $BUNDLE/payload.tar.xz
  step tests MODE=tests TESTS="${TESTS:-$(ls $b/tests | tr '\n' ' ')}" TEST_TIMEOUT=${TEST_TIMEOUT:-300};;
sanitize7)
  for bn in ${SAN_WIDTHS:-64}; do
    step sanitize7-$bn CONVRS_HOPPER_BN=$bn MODE=sanitize SAN_LAYOUT=nhwc SAN_SPECS="wgmma_ws_tma_persistent:fp16:fma:3,64,12,12,136,3,3 --pad 1 --epilogue bias+residual+relu"
  done;;
suites)
  for set in ${SETS:-resnet50:fp16:1/2 resnet50:fp16:2/2}; do
    step "suite-${set//[:\/]/-}" MODE=bench "ALGOS=${SUITE_ALGOS:-$A}" "BENCH_SETS=$set" BENCH_TIMEOUT=${BENCH_TIMEOUT:-280} \
      "BENCH_ARGS=--epilogue ${EPI:-bias+residual+relu} ${SUITE_ARGS:---no-nchw-caller}"
  done;;
patch)
  # For the branch s37-patch-epilogue (bundle s37c, not run in this session): wmma_patch's fused
  # epilogue. Its tests, the sanitizer on a C = 3 strided and a C = 16 layer, then the
  # few-channel deepbench layers per kernel. Then: SETS=deepbench:fp16:1/3 (and the others)
  # with SUITE_ALGOS="$A wmma_patch wmma_smallc" in the suites part.
  step patch-tests MODE=tests TESTS="gpu_epilogue gpu_patch" TEST_TIMEOUT=300
  step patch-sanitize MODE=sanitize SAN_LAYOUT=nhwc SAN_SPECS="wmma_patch:fp16:fma:2,3,17,19,24,3,3 --pad 1 --stride 2 --epilogue bias+residual+relu;wmma_patch:bf16:fma:2,16,13,21,40,3,3 --pad 1 --epilogue scale+bias+residual+silu"
  step patch-runs MODE=runs RUN_DTYPE=fp16 RUN_LAYOUT=nhwc "RUN_SHAPES=16,16,24,240,32,3,3 --pad 1;4,1,161,700,32,5,20 --stride 2;8,3,108,108,64,3,3 --pad 1 --stride 2;16,1,48,480,16,3,3 --pad 1" \
    "RUN_ALGOS=wmma_patch wmma_smallc" "RUN_ARGS=--epilogue ${EPI:-bias+residual+relu}";;
bench)
  # The bench on SET (a suite or a .csv) with EPI, one step per bundle of BUNDLES.
  for bb in ${BUNDLES:-$BUNDLE}; do
    BUNDLE=$bb step "bench-$(basename $bb)-${EPI:-bias+residual+relu}" MODE=bench "ALGOS=${SUITE_ALGOS:-$A}" "BENCH_SETS=${SET:-benchmarks/2026-11-29-h200-s37/small.csv:fp16:}" BENCH_TIMEOUT=${BENCH_TIMEOUT:-280} \
      "BENCH_ARGS=--epilogue ${EPI:-bias+residual+relu} ${SUITE_ARGS:---no-nchw-caller}"
  done;;
esac
done

# Device script of the thirty-sixth session (the fused residual by TMA), run from the repository
# root with BUNDLE set (and OLD, the bundle before the change):
# `bash benchmarks/2026-11-28-h200-s36/s36.sh PART...`.
# PART: jit (convrs info once per bundle, so no timed run pays the PTX JIT), fused (convrs run
# with fused epilogues per kernel and tile width, on BUNDLE then OLD), tests (TESTS), sanitize
# (the residual by TMA on both ping-pong tile shapes, ragged K and M), sanitize7 (step 7's), suites (SETS with
# EPI, NHWC Hopper kernels). Results go to $OUT/all.tar through the fold directory's steps.sh.
source benchmarks/2026-11-28-h100-fold/steps.sh
export CUDA_CACHE_MAXSIZE=4294967296
S="32,128,28,28,512,1,1;32,64,56,56,64,3,3 --pad 1"
for part in "$@"; do
case $part in
jit)
  for bb in $BUNDLE ${OLD:-}; do
    b=$(mktemp -d); tar -C $b -xJf $bb/payload.tar.xz
    CONVRS_REQUIRE_GPU=1 timeout 240 $b/convrs info > $R/w/jit-$(basename $bb).txt 2>&1; echo "jit $bb rc=$?"
  done;;
fused)
  for bb in $BUNDLE ${OLD:-}; do
    n=$(basename $bb)
    for epi in ${EPIS:-bias+residual+relu bias+silu}; do
      BUNDLE=$bb step fused-$n-${epi//+/_} MODE=runs RUN_DTYPE=fp16 RUN_LAYOUT=nhwc "RUN_SHAPES=${FUSED_SHAPES:-$S}" WIDTHS="${FUSED_WIDTHS:-128 256}" \
        RUN_ALGOS="wgmma_ws_tma_persistent wgmma_ws_tma_pingpong_m64" "RUN_ARGS=--epilogue $epi"
      BUNDLE=$bb step fused-$n-${epi//+/_}-pp MODE=runs RUN_DTYPE=fp16 RUN_LAYOUT=nhwc "RUN_SHAPES=${FUSED_SHAPES:-$S}" WIDTHS="${PP_WIDTHS:-128}" \
        RUN_ALGOS="wgmma_ws_tma_pingpong" "RUN_ARGS=--epilogue $epi"
    done
    [ "${BARE_RELU:-1}" = 0 ] || BUNDLE=$bb step fused-$n-bias_relu MODE=runs RUN_DTYPE=fp16 RUN_LAYOUT=nhwc "RUN_SHAPES=${FUSED_SHAPES:-$S}" WIDTHS="256" \
      RUN_ALGOS="wgmma_ws_tma_persistent wgmma_ws_tma_pingpong_m64" "RUN_ARGS=--epilogue bias+relu"
  done;;
tests)
  b=$(mktemp -d); tar -C $b -xJf $BUNDLE/payload.tar.xz
  step tests MODE=tests TESTS="${TESTS:-$(ls $b/tests | tr '\n' ' ')}" TEST_TIMEOUT=${TEST_TIMEOUT:-300};;
sanitize)
  step sanitize CONVRS_HOPPER_BN=64 MODE=sanitize SAN_LAYOUT=nhwc SAN_SPECS="wgmma_ws_tma_pingpong_m64:fp16:fma:3,64,12,12,136,3,3 --pad 1 --epilogue bias+residual+relu;wgmma_ws_tma_pingpong:bf16:fma:2,72,10,10,72,1,1 --epilogue scale+bias+residual+relu6";;
sanitize7)
  # Step 7's residual by TMA: one buffer at 128x128, two at 128x64; the last M tile's second
  # warpgroup idle (432 rows), ragged K.
  for bn in ${SAN_WIDTHS:-128 64}; do
    step sanitize7-$bn CONVRS_HOPPER_BN=$bn MODE=sanitize SAN_LAYOUT=nhwc SAN_SPECS="wgmma_ws_tma_persistent:fp16:fma:3,64,12,12,136,3,3 --pad 1 --epilogue bias+residual+relu"
  done;;
suites)
  A="wgmma_ws_tma_persistent wgmma_ws_tma_pingpong wgmma_ws_tma_pingpong_m64 wgmma_ws_tma_splitk"
  for set in ${SETS:-resnet50:fp16:1/2 resnet50:fp16:2/2}; do
    step "suite-${set//[:\/]/-}" MODE=bench "ALGOS=${SUITE_ALGOS:-$A}" "BENCH_SETS=$set" BENCH_TIMEOUT=${BENCH_TIMEOUT:-280} \
      "BENCH_ARGS=--epilogue ${EPI:-bias+residual+relu} ${SUITE_ARGS:---no-nchw-caller}"
  done;;
esac
done

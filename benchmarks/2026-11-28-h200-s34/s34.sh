# Device script of the thirty-fourth session, run from the repository root with BUNDLE set:
# `bash benchmarks/2026-11-28-h200-s34/s34.sh PART...`. PART: jit (convrs info once, so the
# first timed run does not pay the PTX JIT), planes (the NCHW 1x1 plane kernels on the batch-32
# layers where they lose, per tile width, beside the NHWC kernel on the same GEMM), ncu (one of
# each on 32,128,28,28->512 bf16), tests (TESTS), sanitize (plane tiles across images), suites (SETS, the thirty-third session's
# kernels). Results go to $OUT/all.tar through the fold directory's steps.sh.
source benchmarks/2026-11-28-h100-fold/steps.sh
export CUDA_CACHE_MAXSIZE=4294967296
L="32,128,28,28,512,1,1;32,512,28,28,256,1,1;32,64,56,56,256,1,1;32,256,56,56,128,1,1"
for part in "$@"; do
case $part in
jit)
  b=$(mktemp -d); tar -C $b -xJf $BUNDLE/payload.tar.xz
  CONVRS_REQUIRE_GPU=1 timeout 240 $b/convrs info > $R/w/jit.txt 2>&1; echo "jit rc=$?"; tail -3 $R/w/jit.txt;;
planes)
  step planes MODE=runs RUN_DTYPE=bf16 RUN_LAYOUT=nchw "RUN_SHAPES=${PLANE_SHAPES:-$L}" WIDTHS="${PLANE_WIDTHS:-64 128 256}" \
    RUN_ALGOS="${PLANE_ALGOS:-wgmma_nchw1x1_persistent wgmma_nchw1x1_pingpong_m64 wgmma_nchw1x1_pingpong}"
  [ "${PLANE_NHWC:-1}" = 0 ] || step nhwc MODE=runs RUN_DTYPE=bf16 RUN_LAYOUT=nhwc "RUN_SHAPES=${PLANE_SHAPES:-$L}" WIDTHS=- RUN_ALGOS="wgmma_ws_tma_pingpong_m64 wgmma_ws_tma_pingpong";;
ncu)
  step ncu-planes MODE=ncu NCU_ALGO=wgmma_nchw1x1_persistent NCU_DTYPE=bf16 NCU_SHAPE=32,128,28,28,512,1,1 NCU_LAYOUT=nchw NCU_LINES=60 CONVRS_HOPPER_BN=${NCU_BN:-128}
  step ncu-nhwc MODE=ncu NCU_ALGO=wgmma_ws_tma_pingpong_m64 NCU_DTYPE=bf16 NCU_SHAPE=32,128,28,28,512,1,1 NCU_LAYOUT=nhwc NCU_LINES=60;;
tests)
  b=$(mktemp -d); tar -C $b -xJf $BUNDLE/payload.tar.xz
  step tests MODE=tests TESTS="${TESTS:-$(ls $b/tests | tr '\n' ' ')}" TEST_TIMEOUT=${TEST_TIMEOUT:-300};;
sanitize)
  # Plane tiles spanning images: 144 pixels (pitch 192) in tiles 256 wide, and 64 wide.
  step sanitize MODE=sanitize SAN_LAYOUT=nchw SAN_SPECS="wgmma_nchw1x1_persistent:bf16:fma:3,64,12,12,136,1,1;wgmma_nchw1x1_pingpong_m64:fp16:fma:5,72,12,12,64,1,1";;
suites)
  A="wgmma_nchw1x1_persistent wgmma_nchw1x1_pingpong_m64 wgmma_nchw1x1_pingpong wgmma_ws_tma_persistent wgmma_ws_tma_pingpong wgmma_ws_tma_pingpong_m64 wgmma_ws_tma_splitk wmma_patch wgmma_ws_tma_persistent_to_nchw wgmma_ws_tma_pingpong_to_nchw wgmma_ws_tma_pingpong_m64_to_nchw"
  for set in ${SETS:-resnet50:fp16:1/2 resnet50:fp16:2/2}; do
    step "suite-${set//[:\/]/-}" MODE=bench "ALGOS=${SUITE_ALGOS:-$A}" "BENCH_SETS=$set" BENCH_TIMEOUT=${BENCH_TIMEOUT:-230}
  done;;
esac
done

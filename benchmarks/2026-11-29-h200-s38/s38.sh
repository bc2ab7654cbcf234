# Device script of the thirty-eighth session, run from the repository root with BUNDLE set:
# `bash benchmarks/2026-11-29-h200-s38/s38.sh PART...`. PART: jit (convrs info once, so no timed
# run pays the PTX JIT), patch (wmma_patch's fused epilogue: tests, sanitizer, per-kernel runs),
# csv (the bench on CSV.csv of this directory, fewc by default, for each dtype of DTYPES with EPI,
# SUITE_ALGOS or the Hopper NHWC kernels plus wmma_patch and wmma_smallc, CSV_ARGS), suites (SETS with EPI, SUITE_ALGOS, SUITE_ARGS).
# A bench part's time limit is BENCH_TIMEOUT, or what is left of END (seconds since the call
# began, default 570) when that is less. For the next session (branches s38-set-up-before-wait,
# bundle s38b, and s38-trigger-after-loads on it, bundle s38c; main is s38a): jit (each of
# BUNDLES, or BUNDLE), ab (`convrs run` on AB_SHAPES, AB_DTYPE and AB_LAYOUT, each bundle of BUNDLES in turn, twice, with EPIS),
# tests (TESTS on BUNDLE), sanitize (the set-up-first Hopper entries: a residual by TMA, split-K,
# clusters, ping-pong m64, the NCHW patch), ncu (step 12 on a small layer bare and with bias +
# ReLU, warm: the fifth launch; then dev/ncu_small.sh, ours against PyTorch's cuDNN kernel, on
# NCU_SHAPES: batch-1 depthwise layers and a small 1x1), patchab (wmma_patch's fused residual:
# s38a against the branch s38-patch-residual-prefetch, bundle s38d). Results go to $OUT/all.tar through the fold directory's steps.sh.
source benchmarks/2026-11-28-h100-fold/steps.sh
export CUDA_CACHE_MAXSIZE=4294967296
A="wgmma_ws_tma_persistent wgmma_ws_tma_pingpong wgmma_ws_tma_pingpong_m64 wgmma_ws_tma_splitk"
P="$A wmma_patch wmma_smallc"
# With the NCHW caller (SUITE_ALGOS=nchw SUITE_ARGS=" "): the NCHW kernels that fuse an epilogue too.
N="$P wgmma_nchw1x1_persistent wgmma_nchw1x1_pingpong_m64 wgmma_nchw1x1_pingpong wgmma_nchw_rows_persistent wgmma_nchw_patch_persistent"
# The mobilenet suite (SUITE_ALGOS=mobile, EPI=none): the NHWC depthwise kernels too.
D="$P depthwise_nhwc depthwise_nhwc_strip depthwise_nhwc_tile"
algos() { case "$SUITE_ALGOS" in nchw) echo "$N";; mobile) echo "$D";; "") echo "$P";; *) echo "$SUITE_ALGOS";; esac; }
left() { local l=$(( ${END:-570} - SECONDS )); local t=${BENCH_TIMEOUT:-280}; echo $(( l < t ? l : t )); }
for part in "$@"; do
case $part in
jit)
  for bb in ${BUNDLES:-$BUNDLE}; do
    b=$(mktemp -d); tar -C $b -xJf $bb/payload.tar.xz
    CONVRS_REQUIRE_GPU=1 timeout 240 $b/convrs info > $R/w/jit-$(basename $bb).txt 2>&1; echo "jit $bb rc=$?"
  done;;
patch)
  # The thirty-seventh session's part, written for this (its steps land in the same $OUT).
  bash benchmarks/2026-11-29-h200-s37/s37.sh patch;;
csv|fewc)
  for dt in ${DTYPES:-fp16 bf16}; do
    step "${CSV:-fewc}-$dt-${EPI:-bias+residual+relu}" MODE=bench "ALGOS=$(algos)" "BENCH_SETS=benchmarks/2026-11-29-h200-s38/${CSV:-fewc}.csv:$dt:" BENCH_TIMEOUT=$(left) \
      "BENCH_ARGS=--epilogue ${EPI:-bias+residual+relu} ${CSV_ARGS:---no-nchw-caller}"
  done;;
suites)
  for set in ${SETS:-resnet50:bf16:1/2 resnet50:bf16:2/2}; do
    step "suite-${set//[:\/]/-}" MODE=bench "ALGOS=$(algos)" "BENCH_SETS=$set" BENCH_TIMEOUT=$(left) \
      "BENCH_ARGS=--epilogue ${EPI:-bias+residual+relu} ${SUITE_ARGS:---no-nchw-caller}"
  done;;
ab)
  AB=${AB_SHAPES:-"8,256,14,14,256,1,1;8,128,28,28,512,1,1 --stride 2;16,256,14,14,1024,1,1 --stride 2;8,128,14,14,256,3,3 --pad 1;1,1024,14,14,256,1,1;1,2048,7,7,512,1,1;1,32,112,112,16,1,1;32,256,56,56,128,1,1"}
  for round in 1 2; do
    for bb in ${BUNDLES:-$BUNDLE}; do
      for epi in ${EPIS:-none bias+residual+relu}; do
        BUNDLE=$bb step "ab$round-$(basename $bb)-${epi//+/_}" MODE=runs RUN_DTYPE=${AB_DTYPE:-fp16} RUN_LAYOUT=${AB_LAYOUT:-nhwc} "RUN_SHAPES=$AB" WIDTHS="-" \
          "RUN_ALGOS=${AB_ALGOS:-auto wgmma_ws_tma_pingpong_m64}" "RUN_ARGS=--epilogue $epi"
      done
    done
  done;;
tests)
  step tests MODE=tests TESTS="${TESTS:-gpu_wgmma gpu_epilogue gpu_timing gpu_device_tensor gpu_grouped}" TEST_TIMEOUT=${TEST_TIMEOUT:-300};;
sanitize)
  step sanitize MODE=sanitize SAN_LAYOUT=nhwc SAN_SPECS="wgmma_ws_tma_persistent:fp16:fma:3,64,12,12,136,3,3 --pad 1 --epilogue bias+residual+relu;wgmma_ws_tma_splitk:bf16:fma:2,256,7,7,128,3,3 --pad 1 --epilogue bias+relu;wgmma_ws_tma_persistent_cluster2:fp16:fma:2,64,14,14,128,3,3 --pad 1;wgmma_ws_tma_pingpong_m64:fp16:fma:2,64,9,9,72,1,1 --epilogue bias+residual+relu"
  step sanitize-nchw MODE=sanitize SAN_LAYOUT=nchw SAN_SPECS="wgmma_nchw_patch_persistent:fp16:fma:2,64,12,16,64,3,3 --pad 1;wgmma_nchw1x1_pingpong_m64:bf16:fma:3,64,12,12,64,1,1 --epilogue bias+relu";;
patchab)
  # wmma_patch with a fused residual: main (s38a) against the prefetch branch (s38d), twice,
  # then that branch's gpu_epilogue and gpu_patch. 8,3,108,108->64 runs 128x64 tiles, which the
  # branch leaves as they were: the control.
  for round in 1 2; do
    for bb in ${PATCH_BUNDLES:-target/gpu-s38a target/gpu-s38d}; do
      BUNDLE=$bb step "patchab$round-$(basename $bb)" MODE=runs RUN_DTYPE=fp16 RUN_LAYOUT=nhwc WIDTHS="-" \
        "RUN_SHAPES=16,1,48,480,16,3,3 --pad 1;16,16,24,240,32,3,3 --pad 1;4,1,161,700,32,5,20 --stride 2;8,3,108,108,64,3,3 --pad 1 --stride 2" \
        "RUN_ALGOS=wmma_patch" "RUN_ARGS=--epilogue bias+residual+relu"
    done
  done
  BUNDLE=target/gpu-s38d step patch-tests MODE=tests TESTS="gpu_epilogue gpu_patch" TEST_TIMEOUT=300;;
ncu)
  for epi in none bias+relu; do
    step ncu-${epi//+/_} MODE=ncu NCU_ALGO=wgmma_ws_tma_pingpong_m64 "NCU_SHAPE=8,256,14,14,256,1,1 --epilogue $epi" NCU_LAYOUT=nhwc NCU_LINES=60 NCU_SKIP=4 NCU_RUNS=8 \
      "NCU_SECTIONS=--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section InstructionStats --section SourceCounters --section LaunchStats"
  done
  mkdir -p $R/w/ncu-small; OUT=$R/w/ncu-small SHAPES="${NCU_SHAPES:-1,192,28,28,192,3,3:1:1:depthwise_nhwc_tile:192 1,384,14,14,384,3,3:1:1:depthwise_nhwc:384 8,256,14,14,256,1,1:0:1:wgmma_ws_tma_pingpong_m64}" \
    bash dev/ncu_small.sh 2>&1 | tee $R/w/ncu-small.txt; pack;;
esac
done

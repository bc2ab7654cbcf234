# Device script of the forty-first session, run from the repository root:
# `bash benchmarks/2026-12-01-h200-s41/s41.sh PART...`. Bundle target/gpu-s41a is main with
# step 16's bare NCHW store along the planes for runs under 8 pixels, the NCHW residual copied
# into each thread's shared-memory slots before the mainloop (cp.async), and the three step-16
# rings a stage shorter; target/gpu-s41m is the session's starting commit a69410c (CLI only).
# PART: jit, tests (gpu_epilogue and gpu_wgmma restricted to steps 16 and 17, then TESTS),
# sanitize (the slots path, runs of 8, 4 and 2 pixels, and the short-run bare store), ab
# (`convrs run`, bf16, NCHW, kernel alone: step 16 bare, with bias + ReLU and with bias +
# residual + ReLU on both bundles, and the NHWC twins), ab2 (s41b against s41a and s41m), suites
# (SETS fused from NCHW).
source benchmarks/2026-11-28-h100-fold/steps.sh
export CUDA_CACHE_MAXSIZE=4294967296
export BUNDLE=${BUNDLE:-target/gpu-s41a}
S16="wgmma_ws_tma_persistent_to_nchw wgmma_ws_tma_pingpong_to_nchw wgmma_ws_tma_pingpong_m64_to_nchw"
S17="wgmma_nchw_patch_persistent"
A="wgmma_ws_tma_persistent wgmma_ws_tma_pingpong wgmma_ws_tma_pingpong_m64 wgmma_ws_tma_splitk wmma_patch wmma_smallc"
N="$A wgmma_nchw1x1_persistent wgmma_nchw1x1_pingpong_m64 wgmma_nchw1x1_pingpong wgmma_nchw_rows_persistent $S16 $S17"
AB=${AB_SHAPES:-"32,128,28,28,128,3,3 --pad 1;32,512,28,28,1024,1,1 --stride 2;32,256,14,14,256,3,3 --pad 1;8,64,56,56,64,3,3 --pad 1;32,512,7,7,512,3,3 --pad 1;32,1024,14,14,256,1,1"}
for part in "$@"; do
case $part in
jit)
  BUNDLES=${BUNDLES:-$BUNDLE} bash benchmarks/2026-11-29-h200-s38/s38.sh jit;;
tests)
  step tests-s16 MODE=tests CONVRS_TEST_KERNELS="${S16// /,},$S17" TESTS="gpu_epilogue gpu_wgmma" TEST_TIMEOUT=${TEST_TIMEOUT:-240}
  [ -n "${TESTS:-}" ] && step tests MODE=tests TESTS="$TESTS" TEST_TIMEOUT=${TEST_TIMEOUT:-240};;
sanitize)
  step sanitize-slots MODE=sanitize SAN_LAYOUT=nchw SAN_SPECS="wgmma_ws_tma_pingpong_m64_to_nchw:bf16:fma:2,64,12,12,136,3,3 --pad 1 --epilogue bias+residual+relu;wgmma_ws_tma_persistent_to_nchw:fp16:fma:3,40,14,14,72,3,3 --pad 1 --epilogue scale+bias+residual+silu;wgmma_ws_tma_pingpong_to_nchw:fp16:fma:2,64,9,10,72,1,1 --epilogue bias+residual+gelu;wgmma_ws_tma_pingpong_m64_to_nchw:fp16:fma:2,64,7,7,40,3,3 --pad 1;wgmma_ws_tma_persistent_to_nchw:bf16:fma:2,64,7,14,72,3,3 --pad 1 --epilogue bias+relu";;
ab)
  for epi in none bias+residual+relu bias+relu; do
    for bb in s41a $([ $epi = bias+relu ] || echo s41m); do
      BUNDLE=target/gpu-$bb step "ab-$bb-${epi//+/_}" MODE=runs RUN_DTYPE=bf16 RUN_LAYOUT=nchw "RUN_SHAPES=$AB" WIDTHS="-" "RUN_ALGOS=$S16" "RUN_ARGS=--epilogue $epi"
    done
  done
  step ab-twin MODE=runs RUN_DTYPE=bf16 RUN_LAYOUT=nchw "RUN_SHAPES=$AB" WIDTHS="-" "RUN_ALGOS=auto wgmma_ws_tma_pingpong_m64 wgmma_ws_tma_persistent" "RUN_ARGS=--epilogue bias+residual+relu";;
ab2)
  # The second build (s41b: each chunk's scale and bias loaded ahead of the chunk before's
  # stores) against s41a, with a residual; then s41b with bias + SiLU (the staged store, no
  # residual) against s41m.
  for bb in s41b s41a; do
    BUNDLE=target/gpu-$bb step "ab2-$bb-res" MODE=runs RUN_DTYPE=bf16 RUN_LAYOUT=nchw "RUN_SHAPES=$AB" WIDTHS="-" "RUN_ALGOS=wgmma_ws_tma_pingpong_m64_to_nchw wgmma_ws_tma_persistent_to_nchw" "RUN_ARGS=--epilogue bias+residual+relu"
  done
  for bb in s41b s41m; do
    BUNDLE=target/gpu-$bb step "ab2-$bb-silu" MODE=runs RUN_DTYPE=bf16 RUN_LAYOUT=nchw "RUN_SHAPES=$AB" WIDTHS="-" "RUN_ALGOS=wgmma_ws_tma_pingpong_m64_to_nchw" "RUN_ARGS=--epilogue bias+silu"
  done;;
suites)
  SUITE_ALGOS="${SUITE_ALGOS:-$N}" SUITE_ARGS=" " END=$(( ${END:-570} - SECONDS )) bash benchmarks/2026-11-29-h200-s38/s38.sh suites;;
esac
done

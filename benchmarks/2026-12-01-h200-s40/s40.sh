# Device script of the fortieth session, run from the repository root:
# `bash benchmarks/2026-12-01-h200-s40/s40.sh PART...`. Bundle target/gpu-s40a is main with
# steps 16 and 17 fusing the epilogue in their staged NCHW store; target/gpu-s40m is the same
# build with main's earlier sm_90a PTX (362d562: bare NCHW store, unrolled halves), for the bare
# A/B. PART: jit (each of BUNDLES), tests (TESTS on BUNDLE; gpu_epilogue and gpu_wgmma
# restricted to steps 16 and 17), sanitize (the NCHW store's epilogue: runs of 8, 2 and 1
# pixels, both 16-bit types, steps 16 and 17), ab (`convrs run`, bf16, NCHW, kernel alone: the
# fused NCHW-output kernels against their NHWC twins, and bare against s40m), suites (SETS,
# bias + residual + ReLU from NCHW, the NCHW kernels, steps 16 and 17 and the NHWC ones; the
# thirty-eighth session's part), ab2 (the second build, s40b, and its variant s40c, against
# s40m), ab3 and sanitize-regs (the third build, s40d: step 16's register epilogue). Results go to $OUT/all.tar through the fold directory's steps.sh.
source benchmarks/2026-11-28-h100-fold/steps.sh
export CUDA_CACHE_MAXSIZE=4294967296
export BUNDLE=${BUNDLE:-target/gpu-s40a}
S16="wgmma_ws_tma_persistent_to_nchw wgmma_ws_tma_pingpong_to_nchw wgmma_ws_tma_pingpong_m64_to_nchw wgmma_nchw_patch_persistent"
A="wgmma_ws_tma_persistent wgmma_ws_tma_pingpong wgmma_ws_tma_pingpong_m64 wgmma_ws_tma_splitk wmma_patch wmma_smallc"
N="$A wgmma_nchw1x1_persistent wgmma_nchw1x1_pingpong_m64 wgmma_nchw1x1_pingpong wgmma_nchw_rows_persistent $S16"
AB=${AB_SHAPES:-"32,128,28,28,128,3,3 --pad 1;32,512,28,28,1024,1,1 --stride 2;32,256,14,14,256,3,3 --pad 1;8,64,56,56,64,3,3 --pad 1;32,512,7,7,512,3,3 --pad 1"}
for part in "$@"; do
case $part in
jit)
  BUNDLES=${BUNDLES:-$BUNDLE} bash benchmarks/2026-11-29-h200-s38/s38.sh jit;;
tests)
  step tests-s16 MODE=tests CONVRS_TEST_KERNELS="${S16// /,}" TESTS="gpu_epilogue gpu_wgmma" TEST_TIMEOUT=${TEST_TIMEOUT:-240}
  step tests MODE=tests TESTS="${TESTS:-gpu_caller_stream gpu_device_tensor gpu_api}" TEST_TIMEOUT=${TEST_TIMEOUT:-240};;
sanitize)
  step sanitize-nchw-store MODE=sanitize SAN_LAYOUT=nchw SAN_SPECS="wgmma_ws_tma_persistent_to_nchw:fp16:fma:2,64,12,12,72,3,3 --pad 1 --epilogue bias+residual+relu;wgmma_ws_tma_pingpong_to_nchw:bf16:fma:3,40,13,11,72,3,3 --pad 1 --epilogue scale+bias+residual+silu;wgmma_ws_tma_pingpong_m64_to_nchw:fp16:fma:2,64,9,10,40,1,1 --epilogue bias+residual+gelu;wgmma_nchw_patch_persistent:bf16:fma:2,64,11,16,64,3,3 --pad 1 --epilogue bias+residual+relu";;
ab)
  # The fused kernels and their NHWC twins on the new build; the bare NCHW-output ones on both.
  for epi in none bias+residual+relu; do
    step "ab-s40a-${epi//+/_}" MODE=runs RUN_DTYPE=bf16 RUN_LAYOUT=nchw "RUN_SHAPES=$AB" WIDTHS="-" \
      "RUN_ALGOS=auto wgmma_ws_tma_pingpong_m64 wgmma_ws_tma_pingpong $S16" "RUN_ARGS=--epilogue $epi"
  done
  BUNDLE=target/gpu-s40m step ab-s40m-none MODE=runs RUN_DTYPE=bf16 RUN_LAYOUT=nchw "RUN_SHAPES=$AB" WIDTHS="-" "RUN_ALGOS=$S16";;
ab2)
  # The second build (s40b: bare store unrolled again, the fused one's operands loaded a chunk
  # ahead of its staging, the residual prefetched into L2) and its variant s40c (operands loaded
  # where used, the prefetch kept), fused; bare against s40m again, in this call.
  BUNDLE=target/gpu-s40b step ab2-s40b-res MODE=runs RUN_DTYPE=bf16 RUN_LAYOUT=nchw "RUN_SHAPES=$AB" WIDTHS="-" \
    "RUN_ALGOS=auto wgmma_ws_tma_pingpong_m64 wgmma_ws_tma_pingpong $S16" "RUN_ARGS=--epilogue bias+residual+relu"
  BUNDLE=target/gpu-s40c step ab2-s40c-res MODE=runs RUN_DTYPE=bf16 RUN_LAYOUT=nchw "RUN_SHAPES=$AB" WIDTHS="-" "RUN_ALGOS=$S16" "RUN_ARGS=--epilogue bias+residual+relu"
  BUNDLE=target/gpu-s40b step ab2-s40b-relu MODE=runs RUN_DTYPE=bf16 RUN_LAYOUT=nchw "RUN_SHAPES=$AB" WIDTHS="-" "RUN_ALGOS=$S16" "RUN_ARGS=--epilogue bias+relu"
  for bb in s40b s40m; do
    BUNDLE=target/gpu-$bb step ab2-$bb-none MODE=runs RUN_DTYPE=bf16 RUN_LAYOUT=nchw "RUN_SHAPES=$AB" WIDTHS="-" "RUN_ALGOS=$S16"
  done;;
ab3)
  # The third build (s40d: step 16's bias + ReLU on the accumulators, a residual in the staged
  # store): the NCHW-output kernels fused, and step 12's NHWC twin with bias + ReLU.
  for epi in bias+relu bias+residual+relu; do
    step "ab3-s40d-${epi//+/_}" MODE=runs RUN_DTYPE=bf16 RUN_LAYOUT=nchw "RUN_SHAPES=$AB" WIDTHS="-" "RUN_ALGOS=auto $S16" "RUN_ARGS=--epilogue $epi"
  done
  step ab3-s40d-twin MODE=runs RUN_DTYPE=bf16 RUN_LAYOUT=nchw "RUN_SHAPES=$AB" WIDTHS="-" "RUN_ALGOS=wgmma_ws_tma_pingpong_m64" "RUN_ARGS=--epilogue bias+relu";;
sanitize-regs)
  step sanitize-nchw-regs MODE=sanitize SAN_LAYOUT=nchw SAN_SPECS="wgmma_ws_tma_pingpong_m64_to_nchw:bf16:fma:2,64,9,10,40,3,3 --pad 1 --epilogue scale+bias+relu6;wgmma_ws_tma_persistent_to_nchw:fp16:fma:2,64,12,12,72,3,3 --pad 1 --epilogue bias+relu";;
suites)
  SUITE_ALGOS="${SUITE_ALGOS:-$N}" SUITE_ARGS=" " END=$(( ${END:-570} - SECONDS )) bash benchmarks/2026-11-29-h200-s38/s38.sh suites;;
esac
done

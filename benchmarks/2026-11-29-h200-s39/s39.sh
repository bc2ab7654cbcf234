# Device script of the thirty-ninth session, for the next one, run from the repository root:
# `bash benchmarks/2026-11-29-h200-s39/s39.sh PART...`. The branch `s39-nchw-store-epilogue`
# (bundle target/gpu-s39c) lets the NCHW-output steps 16 and 17 fuse the epilogue in their staged
# NCHW store; main is bundle target/gpu-s39a. PART: jit (each of BUNDLES), tests (TESTS on
# BUNDLE, default the branch), sanitize (the NCHW store's epilogue: runs of 8, 2 and 1 pixels,
# both 16-bit types, steps 16 and 17, on BUNDLE), ab (`convrs run`, bf16, bare and bias +
# residual + ReLU (EPIS), on AB_SHAPES with AB_ALGOS, main's bundle and the branch's, twice: the
# NCHW-output kernels against their NHWC twins, bare against main's (main refuses them fused);
# conversions untimed), suites (SETS, bias + residual + ReLU from NCHW, the NCHW
# kernels that fuse plus step 16 and 17, on BUNDLE). A bench part's time limit is
# BENCH_TIMEOUT, or what is left of END (seconds since this script began, default 570) when
# that is less. Results go to $OUT/all.tar through the fold directory's steps.sh.
source benchmarks/2026-11-28-h100-fold/steps.sh
export CUDA_CACHE_MAXSIZE=4294967296
export BUNDLE=${BUNDLE:-target/gpu-s39c}
A="wgmma_ws_tma_persistent wgmma_ws_tma_pingpong wgmma_ws_tma_pingpong_m64 wgmma_ws_tma_splitk wmma_patch wmma_smallc"
N="$A wgmma_nchw1x1_persistent wgmma_nchw1x1_pingpong_m64 wgmma_nchw1x1_pingpong wgmma_nchw_rows_persistent wgmma_nchw_patch_persistent wgmma_ws_tma_persistent_to_nchw wgmma_ws_tma_pingpong_to_nchw wgmma_ws_tma_pingpong_m64_to_nchw"
for part in "$@"; do
case $part in
jit)
  # The thirty-eighth session's part (its results land in the same $OUT).
  BUNDLES=${BUNDLES:-$BUNDLE} bash benchmarks/2026-11-29-h200-s38/s38.sh jit;;
tests)
  step tests MODE=tests TESTS="${TESTS:-gpu_epilogue gpu_caller_stream gpu_device_tensor gpu_wgmma gpu_api gpu_auto}" TEST_TIMEOUT=${TEST_TIMEOUT:-300};;
sanitize)
  step sanitize-nchw-store MODE=sanitize SAN_LAYOUT=nchw SAN_SPECS="wgmma_ws_tma_persistent_to_nchw:fp16:fma:2,64,12,12,72,3,3 --pad 1 --epilogue bias+residual+relu;wgmma_ws_tma_pingpong_to_nchw:bf16:fma:3,40,13,11,72,3,3 --pad 1 --epilogue scale+bias+residual+silu;wgmma_ws_tma_pingpong_m64_to_nchw:fp16:fma:2,64,9,10,40,1,1 --epilogue bias+residual+gelu;wgmma_nchw_patch_persistent:bf16:fma:2,64,11,16,64,3,3 --pad 1 --epilogue bias+residual+relu";;
ab)
  AB=${AB_SHAPES:-"32,128,28,28,128,3,3 --pad 1;32,512,28,28,1024,1,1 --stride 2;32,1024,14,14,256,1,1;32,256,14,14,256,3,3 --pad 1;8,64,56,56,64,3,3 --pad 1;32,512,7,7,512,3,3 --pad 1"}
  # Bare as well: the branch's NCHW store runs its two column halves as a loop. The
  # thirty-eighth session's part on this layer, type, shape set and kernels.
  AB_SHAPES="$AB" AB_DTYPE=bf16 AB_LAYOUT=nchw BUNDLES="${BUNDLES:-target/gpu-s39a target/gpu-s39c}" \
    AB_ALGOS="${AB_ALGOS:-wgmma_ws_tma_pingpong_m64 wgmma_ws_tma_pingpong_m64_to_nchw wgmma_ws_tma_pingpong wgmma_ws_tma_pingpong_to_nchw}" \
    bash benchmarks/2026-11-29-h200-s38/s38.sh ab;;
suites)
  # The thirty-eighth session's part with the NCHW caller on (SUITE_ARGS " ") and this set.
  SUITE_ALGOS="${SUITE_ALGOS:-$N}" SUITE_ARGS=" " END=$(( ${END:-570} - SECONDS )) bash benchmarks/2026-11-29-h200-s38/s38.sh suites;;
esac
done

# Device script of the forty-seventh session, run from the repository root:
# `bash benchmarks/2026-12-03-h200-s47/s47.sh PART...`. Bundle target/gpu-s47a is 035496b+ (the
# warpgroup-wide NCHW read-back, `store_nchw_wide`) with the gpu_wgmma and gpu_epilogue test
# binaries; target/gpu-s47m is e26d8c5 (the session's start, CLI only).
# PART: jit (both bundles), tests (gpu_epilogue and gpu_wgmma restricted to steps 16 and 17),
# sanitize (the wide read-back bare, fused, with the residual slots and the ping-pong), ab (s45's
# ab on both bundles: step 16 against its NHWC twins, bare and bias + residual + ReLU).
source benchmarks/2026-11-28-h100-fold/steps.sh
export CUDA_CACHE_MAXSIZE=4294967296
export BUNDLE=${BUNDLE:-target/gpu-s47a}
S16="wgmma_ws_tma_persistent_to_nchw wgmma_ws_tma_pingpong_to_nchw wgmma_ws_tma_pingpong_m64_to_nchw"
S17="wgmma_nchw_patch_persistent"
for part in "$@"; do
case $part in
jit)
  BUNDLES=${BUNDLES:-"target/gpu-s47a target/gpu-s47m"} bash benchmarks/2026-11-29-h200-s38/s38.sh jit;;
tests)
  step tests-s16 MODE=tests CONVRS_TEST_KERNELS="${S16// /,},$S17" TESTS="gpu_epilogue gpu_wgmma" TEST_TIMEOUT=${TEST_TIMEOUT:-240};;
sanitize)
  step sanitize-wide MODE=sanitize SAN_LAYOUT=nchw SAN_SPECS="wgmma_ws_tma_pingpong_m64_to_nchw:bf16:fma:2,64,12,12,136,3,3 --pad 1 --epilogue bias+residual+relu;wgmma_ws_tma_persistent_to_nchw:fp16:fma:3,40,14,14,72,3,3 --pad 1 --epilogue scale+bias+residual+silu;wgmma_ws_tma_pingpong_m64_to_nchw:fp16:fma:2,64,9,10,72,1,1;wgmma_nchw_patch_persistent:bf16:fma:2,16,16,19,40,3,3 --pad 1 --epilogue bias+relu;wgmma_ws_tma_persistent_to_nchw:bf16:fma:2,64,16,16,72,1,1";;
ab)
  for bb in ${ABB:-s47a s47m}; do
    BUNDLE=target/gpu-$bb TAG=$bb bash benchmarks/2026-12-02-h200-s45/s45.sh ab
  done;;
esac
done

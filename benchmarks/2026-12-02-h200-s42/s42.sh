# Device script of the forty-second session, run from the repository root:
# `bash benchmarks/2026-12-02-h200-s42/s42.sh PART...`. Bundle target/gpu-s42a is main with
# step 16's fused staged NCHW store along the planes for runs under 8 pixels (the residual slots
# in that mapping); target/gpu-s42m is 286a61b (the session's Auto change, the shipped PTX of
# the forty-first session: CLI only). PART: jit, tests (gpu_epilogue and gpu_wgmma restricted
# to steps 16 and 17), sanitize (the new path: slots at runs of 4 and 2, no residual at runs
# of 1), ab (`convrs run`, bf16, NCHW, kernel alone: step 16 with bias + residual + ReLU and
# with bias + SiLU on both bundles; step 12 at 128 wide; Auto), more (gpu_caller_stream,
# gpu_device_tensor, gpu_api), suites (SETS fused from NCHW, as the forty-first session's), auto
# (Auto's runs on BUNDLE with both epilogues; target/gpu-s42b is af933c3's CLI).
source benchmarks/2026-11-28-h100-fold/steps.sh
export CUDA_CACHE_MAXSIZE=4294967296
export BUNDLE=${BUNDLE:-target/gpu-s42a}
S16="wgmma_ws_tma_persistent_to_nchw wgmma_ws_tma_pingpong_to_nchw wgmma_ws_tma_pingpong_m64_to_nchw"
S17="wgmma_nchw_patch_persistent"
AB=${AB_SHAPES:-"32,128,28,28,128,3,3 --pad 1;32,512,28,28,1024,1,1 --stride 2;32,256,14,14,256,3,3 --pad 1;8,64,56,56,64,3,3 --pad 1;32,512,7,7,512,3,3 --pad 1;32,1024,14,14,256,1,1"}
for part in "$@"; do
case $part in
jit)
  BUNDLES=${BUNDLES:-$BUNDLE} bash benchmarks/2026-11-29-h200-s38/s38.sh jit;;
tests)
  step tests-s16 MODE=tests CONVRS_TEST_KERNELS="${S16// /,},$S17" TESTS="gpu_epilogue gpu_wgmma" TEST_TIMEOUT=${TEST_TIMEOUT:-240};;
sanitize)
  step sanitize-runs MODE=sanitize SAN_LAYOUT=nchw SAN_SPECS="wgmma_ws_tma_pingpong_m64_to_nchw:bf16:fma:2,64,14,14,136,3,3 --pad 1 --epilogue bias+residual+relu;wgmma_ws_tma_persistent_to_nchw:fp16:fma:3,40,7,14,72,3,3 --pad 1 --epilogue scale+bias+residual+silu;wgmma_ws_tma_pingpong_to_nchw:fp16:fma:2,64,7,7,72,1,1 --epilogue bias+gelu";;
ab)
  for epi in bias+residual+relu bias+silu; do
    for bb in s42a s42m; do
      BUNDLE=target/gpu-$bb step "ab-$bb-${epi//+/_}" MODE=runs RUN_DTYPE=bf16 RUN_LAYOUT=nchw "RUN_SHAPES=$AB" WIDTHS="-" "RUN_ALGOS=$S16" "RUN_ARGS=--epilogue $epi"
    done
  done
  for bb in s42a s42m; do
    BUNDLE=target/gpu-$bb step "ab-$bb-m64w128" MODE=runs RUN_DTYPE=bf16 RUN_LAYOUT=nchw "RUN_SHAPES=$AB" WIDTHS="128" "RUN_ALGOS=wgmma_ws_tma_pingpong_m64_to_nchw" "RUN_ARGS=--epilogue bias+residual+relu"
  done
  step ab-auto MODE=runs RUN_DTYPE=bf16 RUN_LAYOUT=nchw "RUN_SHAPES=$AB" WIDTHS="-" "RUN_ALGOS=auto" "RUN_ARGS=--epilogue bias+residual+relu";;
auto)
  # Auto's picks for an NCHW caller on BUNDLE (s42b: af933c3's CLI, the same PTX as s42a).
  for epi in bias+residual+relu bias+silu; do
    step "auto-$(basename $BUNDLE)-${epi//+/_}" MODE=runs RUN_DTYPE=bf16 RUN_LAYOUT=nchw "RUN_SHAPES=$AB" WIDTHS="-" "RUN_ALGOS=auto" "RUN_ARGS=--epilogue $epi"
  done;;
more)
  step tests-more MODE=tests TESTS="gpu_caller_stream gpu_device_tensor gpu_api" TEST_TIMEOUT=${TEST_TIMEOUT:-200};;
suites)
  BUNDLE=$BUNDLE bash benchmarks/2026-12-01-h200-s41/s41.sh suites;;
esac
done

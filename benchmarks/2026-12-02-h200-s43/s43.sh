# Device script of the forty-third session, run from the repository root:
# `bash benchmarks/2026-12-02-h200-s43/s43.sh PART...`. Bundle target/gpu-s43a is a4496e4: step 16
# runs a strided 1x1 layer's stride-1 problem on its input sampled by the sampled transpose, and
# the `sample` kernel copies 8 elements a thread. target/gpu-s43o is 8289fa8's CLI (the session's
# start: the whole input transposed for step 16, the old `sample`). target/gpu-s43t holds
# gpu_device_tensor built after a4496e4 (its sampled bandwidth test). PART: jit, tests
# (gpu_device_tensor whole, then its two bandwidth tests), sanitize (the sampled transpose and
# `sample` under step 16 and step 15 from NCHW), strided (the strided-1x1 suite from NCHW, bf16,
# bias + residual + ReLU, on BUNDLE), suites (resnet50 fused from NCHW, as the forty-second
# session's), planes (the layers a plane kernel takes after `sample`, on BUNDLES; target/gpu-s43b
# is 0d2e2b6's CLI: `sample` through shared memory; TESTBIN=target/gpu-s43t2 its
# gpu_device_tensor).
source benchmarks/2026-11-28-h100-fold/steps.sh
export CUDA_CACHE_MAXSIZE=4294967296
export BUNDLE=${BUNDLE:-target/gpu-s43a}
S16="wgmma_ws_tma_persistent_to_nchw wgmma_ws_tma_pingpong_to_nchw wgmma_ws_tma_pingpong_m64_to_nchw"
A1="wgmma_ws_tma_persistent wgmma_ws_tma_pingpong wgmma_ws_tma_pingpong_m64 wgmma_nchw1x1_persistent wgmma_nchw1x1_pingpong_m64 wgmma_nchw1x1_pingpong"
for part in "$@"; do
case $part in
jit)
  BUNDLES=${BUNDLES:-$BUNDLE} bash benchmarks/2026-11-29-h200-s38/s38.sh jit;;
tests)
  t=$(mktemp -d); tar -C $t -xJf ${TESTBIN:-target/gpu-s43t}/tests.tar.xz
  mkdir -p $R/w/tests
  export CONVRS_REQUIRE_GPU=1 CONVRS_REQUIRE_HOPPER=1
  timeout ${TEST_TIMEOUT:-200} $t/gpu_device_tensor > $R/w/tests/gpu_device_tensor.log 2>&1; echo "gpu_device_tensor rc=$?"
  grep -E "^test |test result|panicked|FAILED" $R/w/tests/gpu_device_tensor.log | tail -30
  timeout 150 $t/gpu_device_tensor --ignored --nocapture --test-threads 1 sampled_transform_bandwidth transform_bandwidth > $R/w/tests/bandwidth.log 2>&1; echo "bandwidth rc=$?"
  grep -E "^\||test result|panicked" $R/w/tests/bandwidth.log
  pack;;
sanitize)
  step sanitize-sampled MODE=sanitize SAN_LAYOUT=nchw SAN_SPECS="wgmma_ws_tma_persistent_to_nchw:bf16:fma:2,64,16,12,40,1,1 --stride 2 --epilogue bias+residual+relu;wgmma_nchw1x1_pingpong_m64:fp16:fma:3,40,15,17,24,1,1 --stride 2,3";;
strided)
  # The 1x1 kernels (no wmma_patch or wmma_smallc: 10-40x slower on these layers), so the NCHW
  # caller's row tries the same three routes on both bundles. PYTORCH=off for the old bundle:
  # only its caller row is compared.
  for bb in ${BUNDLES:-$BUNDLE}; do
    BUNDLE=$bb step "strided-$(basename $bb)-${PART//\//of}" MODE=bench "ALGOS=${STRIDED_ALGOS:-$A1 $S16}" "BENCH_SETS=dev/suites/strided-1x1.csv:bf16:${PART:-}" BENCH_TIMEOUT=${BENCH_TIMEOUT:-280} \
      "BENCH_ARGS=--epilogue ${EPI:-bias+residual+relu} --pytorch $([ $(basename $bb) = gpu-s43o ] && echo off || echo auto)"
  done;;
planes)
  # The strided 1x1 layers whose NCHW caller takes a plane kernel after `sample`, as `--shape`s
  # (gpu.sh's bench always names a suite, so convrs runs here).
  for bb in ${BUNDLES:-$BUNDLE}; do
    b=$(mktemp -d); tar -C $b -xJf $bb/payload.tar.xz
    (eval "$(sed -n '/^torch_cudnn=/,/^fi$/p' $bb/run-gpu.sh)"; export CONVRS_COMMIT=$(cat $bb/commit.txt)
     timeout ${BENCH_TIMEOUT:-200} $b/convrs bench --dtype bf16 --runs 20 --warmup 3 --search-seconds 1 $(for a in ${STRIDED_ALGOS:-$A1}; do printf -- '--algo %s ' $a; done) \
       --epilogue ${EPI:-bias+residual+relu} --pytorch off --stride 2 --shape 8,64,56,56,256,1,1 --shape 16,64,56,56,256,1,1 --shape 8,256,56,56,128,1,1 --shape 16,256,56,56,128,1,1 --shape 32,256,56,56,512,1,1 \
       --json $R/w/planes-$(basename $bb).json > $R/w/planes-$(basename $bb).md 2>&1; echo "planes $bb rc=$?")
    xz $R/w/planes-$(basename $bb).json; pack
  done;;
suites)
  BUNDLE=$BUNDLE bash benchmarks/2026-12-01-h200-s41/s41.sh suites;;
esac
done

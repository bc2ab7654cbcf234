# Dev, on the GPU machine, one call (thirtieth session, bundle h4): step 17's 128x64 tile with
# 8 filter stages: warm-up, smoke, gpu_wgmma restricted to step 17, the kernel alone against
# step 7 on K = 64 layers (L2-warm `convrs run`). Outputs tarred as they go.
set -u
cd "$(dirname "$0")/../.."
export BUNDLE=${BUNDLE:-target/gpu-h4}
. benchmarks/2026-11-28-h100-fold/steps.sh
b=$(mktemp -d); tar -C $b -xJf $BUNDLE/payload.tar.xz
mkdir -p $R/w/smoke
P=wgmma_nchw_patch_persistent
CONVRS_REQUIRE_GPU=1 timeout 150 $b/convrs run --algo wgmma_ws_tma_persistent --dtype fp16 --layout nhwc --shape 2,64,56,56,64,3,3 --pad 1 --runs 5 > $R/w/smoke/warm.txt 2>&1; echo "warm-up rc=$?"
CONVRS_REQUIRE_GPU=1 timeout 30 $b/convrs run --algo $P --dtype fp16 --layout nchw --shape 2,64,56,56,64,3,3 --pad 1 --runs 5 > $R/w/smoke/run.txt 2>&1; rc=$?
echo "smoke rc=$rc"; grep -E "^time|^check|rror" $R/w/smoke/run.txt | head -3; pack
[ $rc = 0 ] || exit 1
step tests CONVRS_TEST_KERNELS=$P MODE=tests "TESTS=gpu_wgmma" TEST_TIMEOUT=200
S="32,64,56,56,64,3,3 --pad 1;16,64,56,56,64,3,3 --pad 1;8,64,56,56,64,3,3 --pad 1;16,32,28,28,64,3,3 --pad 1"
step runs MODE=runs "RUN_ALGOS=wgmma_ws_tma_persistent $P" RUN_LAYOUT=nchw "RUN_SHAPES=$S"

# Dev, on the GPU machine, one call: the fold's test, sanitizers, an A/B of convrs run and the
# speech bench with and without CONVRS_FOLD_W=1; ncu of the NCHW caller's launches on a 14x14 1x1
# layer. Outputs are tarred as they go (the device returns at most 8 files).
set -u
cd "$(dirname "$0")/../.."
G=benchmarks/2026-11-28-h100-fold/gpu.sh
export BUNDLE=${BUNDLE:-target/gpu-f1}
R=$OUT; mkdir -p $R/w
pack() { (cd $R/w && for f in *.json; do [ -e "$f" ] && xz "$f"; done; tar rf $R/all.tar --remove-files $(ls) 2>/dev/null); }
step() { local name=$1; shift; mkdir -p $R/w/$name; echo "=== $name"; OUT=$R/w/$name env "$@" bash $G 2>&1 | tee $R/w/$name.txt; pack; }
step fold-test CONVRS_FOLD_W=1 MODE=tests TESTS=gpu_wgmma TEST_FILTER=wgmma_folded TEST_TIMEOUT=200
step fold-san CONVRS_FOLD_W=1 MODE=sanitize SAN_LAYOUT=nhwc "SAN_SPECS=wgmma_ws_tma_persistent:fp16:fma:2,32,19,41,40,5,10 --stride 2;wgmma_ws_tma_pingpong_m64:bf16:fma:3,16,11,30,24,3,6 --stride 3 --pad 1,0"
for f in 0 1; do
  step runs-fold$f CONVRS_FOLD_W=$f MODE=runs "RUN_ALGOS=wgmma_ws_tma_persistent wgmma_ws_tma_pingpong wgmma_ws_tma_pingpong_m64" RUN_LAYOUT=nhwc "RUN_ARGS=--stride 2" "RUN_SHAPES=32,32,79,341,32,5,10;8,32,79,341,32,5,10"
done
A="wgmma_ws_tma_persistent wgmma_ws_tma_pingpong wgmma_ws_tma_pingpong_m64 wgmma_ws_tma_splitk wmma_patch"
for f in 0 1; do
  step bench-fold$f CONVRS_FOLD_W=$f MODE=bench "ALGOS=$A" BENCH_SETS="dev/suites/speech-c32.csv:fp16: dev/suites/speech-c32.csv:bf16:" BENCH_TIMEOUT=150
done
step ncu14 MODE=ncu NCU_KERNEL=. NCU_COUNT=6 "NCU_SECTIONS=--section SpeedOfLight" NCU_ALGO=wgmma_ws_tma_pingpong_m64 NCU_SHAPE=16,256,14,14,256,1,1 NCU_LINES=40

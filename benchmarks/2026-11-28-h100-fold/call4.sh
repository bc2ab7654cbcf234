# Dev, on the GPU machine, one call: a bench of SETS ("suite:dtype:part"..., default resnet50
# bf16) into $OUT/NAME, with step 16 among the ten kernels (bundle g2). The fourth call ran it as
# is; the fifth as NAME=deepbench-p1 SETS="deepbench:fp16:1/3" TIMEOUT=230.
set -u
cd "$(dirname "$0")/../.."
G=benchmarks/2026-11-28-h100-fold/gpu.sh
export BUNDLE=${BUNDLE:-target/gpu-g2}
R=$OUT; mkdir -p $R/w
pack() { (cd $R/w && tar rf $R/all.tar --remove-files $(ls) 2>/dev/null); }
step() { local name=$1; shift; mkdir -p $R/w/$name; echo "=== $name"; OUT=$R/w/$name env "$@" bash $G 2>&1 | tee $R/w/$name.txt; (cd $R/w/$name && for f in *.json; do [ -e "$f" ] && xz "$f"; done); pack; }
A="wgmma_nchw1x1_persistent wgmma_nchw1x1_pingpong_m64 wgmma_ws_tma_persistent wgmma_ws_tma_pingpong wgmma_ws_tma_pingpong_m64 wgmma_ws_tma_splitk wmma_patch wgmma_ws_tma_persistent_to_nchw wgmma_ws_tma_pingpong_to_nchw wgmma_ws_tma_pingpong_m64_to_nchw"
step ${NAME:-bench-bf16} MODE=bench "ALGOS=$A" "BENCH_SETS=${SETS:-resnet50:bf16:1/2 resnet50:bf16:2/2}" BENCH_TIMEOUT=${TIMEOUT:-165}

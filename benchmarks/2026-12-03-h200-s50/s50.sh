# Device script of the fiftieth session, run from the repository root:
# `bash benchmarks/2026-12-03-h200-s50/s50.sh PART...` with BUNDLE (default target/gpu-s50b).
# PART: jit; tests (gpu_wgmma and gpu_epilogue on the NCHW 1x1 plane kernels, which now take
# even planes whose H*W is not a multiple of 8, 14x14 say, copied by cp.async; the first bundle,
# s50a, tried grouped channel planes by TMA and died, notes/hopper.md §35); sanitize (memcheck,
# racecheck, synccheck on such planes: 8- and 4-byte pieces, bare and fused); grouped (dev/suites/grouped-planes.csv,
# every kernel, bf16 bare, EPIS more epilogues); deepbench (s49.sh's: DB_SETS).
source benchmarks/2026-11-28-h100-fold/steps.sh
export BUNDLE=${BUNDLE:-target/gpu-s50b}
export CUDA_CACHE_MAXSIZE=4294967296
b=$(mktemp -d); tar -C $b -xJf $BUNDLE/payload.tar.xz
P=wgmma_nchw1x1_persistent,wgmma_nchw1x1_pingpong_m64,wgmma_nchw1x1_pingpong
for part in "$@"; do
case $part in
jit)
  s=$(date +%s); timeout 280 $b/convrs info > $R/w/jit.txt 2>&1; echo "jit rc=$? $(( $(date +%s) - s )) s"; pack;;
tests)
  step tests-wg MODE=tests CONVRS_TEST_KERNELS=$P TESTS=gpu_wgmma TEST_TIMEOUT=${TEST_TIMEOUT:-200}
  step tests-ep MODE=tests CONVRS_TEST_KERNELS=$P TESTS=gpu_epilogue TEST_TIMEOUT=${TEST_TIMEOUT:-200};;
sanitize)
  step sanitize MODE=sanitize SAN_LAYOUT=nchw SAN_SPECS="${SAN:-wgmma_nchw1x1_pingpong_m64:bf16:fma:3,128,14,14,72,1,1;wgmma_nchw1x1_persistent:fp16:fma:5,40,10,5,136,1,1 --epilogue bias+relu;wgmma_nchw1x1_pingpong:bf16:fma:2,192,6,5,64,1,1 --epilogue bias+residual+relu;wgmma_nchw1x1_persistent:bf16:fma:3,128,14,14,200,1,1 --epilogue scale+bias+residual+relu}";;
grouped)
  for ep in ${EPIS:-none}; do
    n=grouped-bf16-$ep
    timeout ${BENCH_TIMEOUT:-300} $b/convrs bench --suite dev/suites/grouped-planes.csv --dtype bf16 --runs 20 --warmup 3 --search-seconds 1 --epilogue $ep --pytorch auto --json $R/w/$n.json > $R/w/$n.md 2>$R/w/$n.err
    echo "$n rc=$?"; python3 dev/nchw_user_summary.py $R/w/$n.json | tail -12; xz $R/w/$n.json; pack
  done;;
deepbench)
  BUNDLE=$BUNDLE bash benchmarks/2026-12-03-h200-s49/s49.sh deepbench;;
esac
done

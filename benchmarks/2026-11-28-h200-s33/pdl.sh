# Device script of the thirty-third session (programmatic dependent launch), run from the
# repository root with BUNDLE set: `bash benchmarks/2026-11-28-h200-s33/pdl.sh PART...` where PART
# is smoke (convrs run, graph-timed, each spec with CONVRS_PDL=0 then 1), tests (TESTS, default
# every test binary of the bundle), sanitize, bench (BENCH_SETS, BENCH_ALGOS; CONVRS_PDL as
# exported) or auto. Results go to $OUT/all.tar through the fold directory's steps.sh.
source benchmarks/2026-11-28-h100-fold/steps.sh
for part in "$@"; do
case $part in
smoke)
  b=$(mktemp -d); tar -C $b -xJf $BUNDLE/payload.tar.xz; mkdir -p $R/w/smoke
  nvidia-smi --query-gpu=name --format=csv,noheader > $R/w/smoke/gpu.txt
  # "algo layout dtype shape args;...": batch-1 depthwise layers on each NHWC kernel, a large
  # one, batch-1 and small dense layers (issue 26's), an NCHW plane kernel.
  IFS=';' read -ra specs <<< "${SMOKE_SPECS:-depthwise_nhwc nhwc fp16 1,384,14,14,384,3,3 --pad 1 --groups 384;depthwise_nhwc_strip nhwc fp16 1,576,14,14,576,3,3 --pad 1 --groups 576;depthwise_nhwc_tile nhwc fp16 1,192,28,28,192,3,3 --pad 1 --stride 2 --groups 192;depthwise_nhwc_tile nhwc fp16 32,32,112,112,32,3,3 --pad 1 --groups 32;depthwise_nhwc_strip nhwc fp16 32,144,56,56,144,3,3 --pad 1 --groups 144;auto nhwc fp16 1,1024,14,14,256,1,1;auto nhwc fp16 1,2048,7,7,512,1,1;auto nhwc fp16 8,64,56,56,256,1,1;auto nhwc fp16 1,256,14,14,256,3,3 --pad 1;auto nhwc fp16 32,256,56,56,128,1,1;wgmma_nchw1x1_persistent nchw fp16 8,256,28,28,128,1,1;auto nchw fp32 1,64,56,56,64,3,3 --pad 1}"
  for spec in "${specs[@]}"; do
    set -- $spec; a=$1 l=$2 dt=$3; shift 3
    for pdl in 0 1; do
      r=$(CONVRS_PDL=$pdl CONVRS_REQUIRE_GPU=1 timeout 60 $b/convrs run --algo $a --dtype $dt --layout $l --shape "$@" --runs 50 2>&1)
      echo "pdl=$pdl $a $l $dt [$*]: $(echo "$r" | grep -E '^time' | cut -c1-70) | $(echo "$r" | grep -E '^kernel|^check|rror|panick' | tr '\n' ' ' | cut -c1-160)"
    done
  done | tee $R/w/smoke/runs.txt
  pack;;
tests)
  b=$(mktemp -d); tar -C $b -xJf $BUNDLE/payload.tar.xz
  step tests MODE=tests TESTS="${TESTS:-$(ls $b/tests | tr '\n' ' ')}" TEST_TIMEOUT=${TEST_TIMEOUT:-300};;
sanitize)
  step sanitize MODE=sanitize SAN_LAYOUT=nhwc SAN_SPECS="depthwise_nhwc_tile:fp16:fma:2,40,27,27,40,3,3 --pad 1 --groups 40;wgmma_ws_tma_persistent:fp16:fma:2,64,14,14,128,3,3 --pad 1;wgmma_ws_tma_pingpong:bf16:fma:3,128,9,9,96,1,1";;
sanitize_nchw)
  step sanitize_nchw MODE=sanitize SAN_LAYOUT=nchw SAN_SPECS="wgmma_nchw1x1_persistent:fp16:fma:2,64,16,16,128,1,1;wgmma_ws_tma_persistent:fp16:fma:2,64,14,14,128,3,3 --pad 1";;
bench)
  step bench MODE=bench BENCH_SETS="${BENCH_SETS:-dev/suites/depthwise.csv:fp16}" ALGOS="${BENCH_ALGOS:-depthwise_nhwc depthwise_nhwc_strip depthwise_nhwc_tile}";;
auto)
  step auto MODE=tests TESTS=gpu_auto TEST_TIMEOUT=200;;
esac
done

# Device script of the thirty-second session (depthwise_nhwc_tile), run from the repository root
# with BUNDLE set: `bash benchmarks/2026-11-28-h200-s32/tile.sh PART...` where PART is smoke,
# tests, sanitize, bench (BENCH_SETS, default the fp16 depthwise suite; BENCH_ALGOS, default
# the three NHWC kernels) or auto (gpu_auto). Results go to
# $OUT/all.tar through the fold directory's steps.sh (`step`, `pack`).
source benchmarks/2026-11-28-h100-fold/steps.sh
T=depthwise_nhwc_tile
NHWC_ALGOS="depthwise_nhwc depthwise_nhwc_strip $T"
for part in "$@"; do
case $part in
smoke)
  b=$(mktemp -d); tar -C $b -xJf $BUNDLE/payload.tar.xz; mkdir -p $R/w/smoke
  nvidia-smi --query-gpu=name --format=csv,noheader > $R/w/smoke/gpu.txt
  # (shape, pad, stride): MobileNetV2 3x3 s1 and s2, ConvNeXt 7x7, a 7x7 plane, batch 1.
  # SMOKE_SPECS replaces the list ("shape pad stride;...").
  IFS=';' read -ra specs <<< "${SMOKE_SPECS:-32,144,56,56,144,3,3 1 1;32,96,112,112,96,3,3 1 2;32,96,56,56,96,7,7 3 1;32,960,7,7,960,3,3 1 1;1,144,56,56,144,3,3 1 1;32,768,7,7,768,7,7 3 1}"
  for spec in "${specs[@]}"; do
    set -- $spec; g=$(echo $1 | cut -d, -f2)
    # The tile kernel once per CONVRS_DW_TILE_RESIDENT of TILE_RES ("-": the planner's).
    for a in ${SMOKE_ALGOS:-$NHWC_ALGOS}; do
      for res in $([ $a = $T ] && echo ${TILE_RES:--} || echo -); do
      for dt in ${SMOKE_DTYPES:-fp16}; do
        r=$(CONVRS_DW_TILE_RESIDENT=${res#-} CONVRS_REQUIRE_GPU=1 timeout 60 $b/convrs run --algo $a --dtype $dt --layout nhwc --shape $1 --pad $2 --stride $3 --groups $g --runs 50 2>&1)
        echo "$a${res#-} $dt [$1 p$2 s$3]: $(echo "$r" | grep -E '^time' | cut -c1-60) | $(echo "$r" | grep -E '^check|rror|panick' | tr '\n' ' ' | cut -c1-140)"
      done
      done
    done
  done | tee $R/w/smoke/runs.txt
  pack;;
tests)
  step tests MODE=tests TESTS="gpu_depthwise gpu_epilogue" CONVRS_TEST_KERNELS=$T TEST_TIMEOUT=240;;
sanitize)
  step sanitize MODE=sanitize SAN_LAYOUT=nhwc SAN_SPECS="$T:fp16:fma:2,40,27,27,40,3,3 --pad 1 --groups 40;$T:bf16:fma:3,24,19,13,24,7,7 --pad 3 --stride 2 --groups 24;$T:fp32:fma:2,512,7,7,512,5,5 --pad 2 --groups 512 --bias --act relu";;
bench)
  step bench MODE=bench BENCH_SETS="${BENCH_SETS:-dev/suites/depthwise.csv:fp16}" ALGOS="${BENCH_ALGOS:-$NHWC_ALGOS}";;
auto)
  step auto MODE=tests TESTS=gpu_auto TEST_TIMEOUT=200;;
esac
done

# Device script of the thirty-third session (programmatic dependent launch), run from the
# repository root with BUNDLE set: `bash benchmarks/2026-11-28-h200-s33/pdl.sh PART...` where PART
# is smoke (convrs run, graph-timed, each spec with CONVRS_PDL=0 then 1), tests (TESTS, default
# every test binary of the bundle), sanitize, bench (BENCH_SETS, BENCH_ALGOS; CONVRS_PDL as
# exported), planes (the small-planes suite, fp16) or auto. Results go to $OUT/all.tar through the fold directory's steps.sh.
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
ab)
  # CONVRS_PDL=0 and 1 alternated AB_REPEATS times on the layers whose times moved most between
  # the thirty-second session's t6 and this session's depthwise bench.
  b=$(mktemp -d); tar -C $b -xJf $BUNDLE/payload.tar.xz; mkdir -p $R/w/ab
  IFS=';' read -ra specs <<< "${AB_SPECS:-depthwise_nhwc_strip 32,768,7,7,768,7,7 --pad 3 --groups 768;depthwise_nhwc_tile 32,768,7,7,768,7,7 --pad 3 --groups 768;depthwise_nhwc_tile 1,96,56,56,96,7,7 --pad 3 --groups 96;depthwise_nhwc_strip 32,960,7,7,960,3,3 --pad 1 --groups 960;depthwise_nhwc 1,384,14,14,384,3,3 --pad 1 --groups 384}"
  for spec in "${specs[@]}"; do
    set -- $spec; a=$1; shift
    for i in $(seq ${AB_REPEATS:-3}); do for pdl in 0 1; do
      r=$(CONVRS_PDL=$pdl CONVRS_REQUIRE_GPU=1 timeout 60 $b/convrs run --algo $a --dtype fp16 --layout nhwc --shape "$@" --runs 50 2>&1)
      echo "pdl=$pdl $a [$*]: $(echo "$r" | grep -E '^time' | cut -c1-30) | $(echo "$r" | grep -E '^check|rror|panick' | tr '\n' ' ' | cut -c1-60)"
    done; done
  done | tee $R/w/ab/runs.txt
  pack;;
variants)
  # Where the next grid may be scheduled (bundle s33c: three convrs binaries): A never says
  # (each block's exit does), B at entry where the grid has fewer blocks than the GPU has SMs,
  # C at entry always (as 711e329); "off" is C with CONVRS_PDL=0. Each binary's PTX is
  # JIT-compiled once first, the three at a time.
  b=$(mktemp -d); tar -C $b -xJf $BUNDLE/payload.tar.xz; mkdir -p $R/w/variants
  export CUDA_CACHE_MAXSIZE=4294967296
  for v in A B C; do (CONVRS_REQUIRE_GPU=1 timeout 200 $b/convrs_$v info > /dev/null 2>&1; echo "jit $v rc=$?") & done; wait
  IFS=';' read -ra specs <<< "${VAR_SPECS:-depthwise_nhwc fp16 1,384,14,14,384,3,3 --pad 1 --groups 384;depthwise_nhwc_strip fp16 1,576,14,14,576,3,3 --pad 1 --groups 576;depthwise_nhwc_tile fp16 1,192,28,28,192,3,3 --pad 1 --stride 2 --groups 192;auto fp16 1,1024,14,14,256,1,1;depthwise_nhwc_strip fp16 32,768,7,7,768,7,7 --pad 3 --groups 768;depthwise_nhwc_tile fp16 32,768,7,7,768,7,7 --pad 3 --groups 768;depthwise_nhwc_strip fp16 32,144,56,56,144,3,3 --pad 1 --groups 144;auto fp16 32,256,56,56,128,1,1;depthwise_nhwc_strip fp16 32,960,7,7,960,3,3 --pad 1 --groups 960;auto bf16 8,64,56,56,256,1,1}"
  for spec in "${specs[@]}"; do
    set -- $spec; a=$1 dt=$2; shift 2
    for i in $(seq ${VAR_REPEATS:-2}); do for v in off A B C; do
      bin=$b/convrs_${v/off/C}; pdl=$([ $v = off ] && echo 0 || echo 1)
      r=$(CONVRS_PDL=$pdl CONVRS_REQUIRE_GPU=1 timeout 60 $bin run --algo $a --dtype $dt --layout nhwc --shape "$@" --runs 50 2>&1)
      echo "$v $a $dt [$*]: $(echo "$r" | grep -E '^time' | cut -c11-20) | $(echo "$r" | grep -E '^check|rror|panick' | tr '\n' ' ' | cut -c1-60)"
    done; done
  done | tee $R/w/variants/runs.txt
  pack;;
suites)
  # The bf16 suites of the thirty-first session's c5 (resnet50 both parts, deepbench part 1/3)
  # with its ten kernels, for the NCHW caller against NCHW baselines and the NHWC caller.
  A="wgmma_nchw1x1_persistent wgmma_nchw1x1_pingpong_m64 wgmma_ws_tma_persistent wgmma_ws_tma_pingpong wgmma_ws_tma_pingpong_m64 wgmma_ws_tma_splitk wmma_patch wgmma_ws_tma_persistent_to_nchw wgmma_ws_tma_pingpong_to_nchw wgmma_ws_tma_pingpong_m64_to_nchw"
  for set in ${SETS:-resnet50:bf16:1/2 resnet50:bf16:2/2 deepbench:bf16:1/3}; do
    step "suite-${set//[:\/]/-}" MODE=bench "ALGOS=$A" "BENCH_SETS=$set" BENCH_TIMEOUT=${BENCH_TIMEOUT:-230}
  done;;
tests)
  b=$(mktemp -d); tar -C $b -xJf $BUNDLE/payload.tar.xz
  step tests MODE=tests TESTS="${TESTS:-$(ls $b/tests | tr '\n' ' ')}" TEST_TIMEOUT=${TEST_TIMEOUT:-300};;
sanitize)
  step sanitize MODE=sanitize SAN_LAYOUT=nhwc SAN_SPECS="depthwise_nhwc_tile:fp16:fma:2,40,27,27,40,3,3 --pad 1 --groups 40;wgmma_ws_tma_persistent:fp16:fma:2,64,14,14,128,3,3 --pad 1;wgmma_ws_tma_pingpong:bf16:fma:3,128,9,9,96,1,1";;
sanitize_nchw)
  step sanitize_nchw MODE=sanitize SAN_LAYOUT=nchw SAN_SPECS="wgmma_nchw1x1_persistent:fp16:fma:2,64,16,16,128,1,1;wgmma_ws_tma_persistent:fp16:fma:2,64,14,14,128,3,3 --pad 1";;
bench)
  step bench MODE=bench BENCH_SETS="${BENCH_SETS:-dev/suites/depthwise.csv:fp16}" ALGOS="${BENCH_ALGOS:-depthwise_nhwc depthwise_nhwc_strip depthwise_nhwc_tile}";;
planes)
  # The 31 stride-1 layers on 14x14 and 7x7 planes: the NCHW caller runs transposes around an
  # NHWC kernel there (three launches a run). The kernels of the thirty-first session's c1
  # bench but step 17 (never the fastest route there).
  step planes MODE=bench BENCH_SETS="dev/suites/small-planes.csv:fp16" BENCH_TIMEOUT=${BENCH_TIMEOUT:-280} ALGOS="wgmma_ws_tma_persistent wgmma_ws_tma_pingpong wgmma_ws_tma_pingpong_m64 wgmma_ws_tma_splitk wgmma_ws_tma_persistent_to_nchw wgmma_ws_tma_pingpong_to_nchw wgmma_ws_tma_pingpong_m64_to_nchw";;
auto)
  step auto MODE=tests TESTS=gpu_auto TEST_TIMEOUT=200;;
esac
done

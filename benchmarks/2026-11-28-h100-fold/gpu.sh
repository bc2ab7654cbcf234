# Dev, on the GPU machine: the column-stride fold (CONVRS_FOLD_W) and the NCHW caller's transposes (bundle $BUNDLE). MODE
# (space-separated, in order): runs (convrs run RUN_ALGOS x RUN_SHAPES ';'-separated, RUN_DTYPE,
# RUN_PREC, RUN_LAYOUT, once per tile width of WIDTHS (CONVRS_HOPPER_BN; "-" the planner's);
# each checked against the CPU reference), tests (TESTS binaries; CONVRS_TEST_KERNELS restricts
# them), sanitize (SAN_SPECS "algo:dtype:prec:shape args" ';'-separated), bench (BENCH_SETS
# "suite:dtype:part" restricted to ALGOS), ncu (NCU_ALGO on NCU_SHAPE, NCU_LAYOUT, the first NCU_COUNT
# launches matching NCU_KERNEL after NCU_SKIP of them, of NCU_RUNS timed runs; NCU_SECTIONS the sections).
set -u
O=$OUT
B=${BUNDLE:-target/gpu-f1}
eval "$(sed -n '/^torch_cudnn=/,/^fi$/p' $B/run-gpu.sh)"
b=$(mktemp -d); tar -C $b -xJf $B/payload.tar.xz
export CONVRS_COMMIT=$(cat $B/commit.txt)
export CONVRS_REQUIRE_GPU=1 CONVRS_REQUIRE_HOPPER=1
nvidia-smi --query-gpu=name --format=csv,noheader > $O/gpu.txt
for mode in $MODE; do
if [ "$mode" = runs ]; then
  IFS=';' read -ra shapes <<< "${RUN_SHAPES:-32,256,56,56,128,1,1}"
  for width in ${WIDTHS:--}; do
  [ "$width" = - ] && unset CONVRS_HOPPER_BN || export CONVRS_HOPPER_BN=$width
  echo "== width $width" | tee -a $O/runs.txt
  for algo in ${RUN_ALGOS:-wgmma_nchw1x1_pingpong_m64}; do
    for shape in "${shapes[@]}"; do
      r=$(timeout 90 $b/convrs run --algo $algo --dtype ${RUN_DTYPE:-fp16} --precision ${RUN_PREC:-fma} --shape $shape --layout ${RUN_LAYOUT:-nchw} --runs ${RUNS:-50} ${RUN_ARGS:-} 2>&1)
      t=$(echo "$r" | grep -E "^time" | cut -c1-40); c=$(echo "$r" | grep -E "^check|^rel L2|rror" | tr '\n' ' ' | cut -c1-120)
      echo "$algo [$shape]: $t | $c"
    done
  done | tee -a $O/runs.txt
  done
  unset CONVRS_HOPPER_BN
elif [ "$mode" = tests ]; then
  for t in ${TESTS:-gpu_wgmma}; do
    timeout ${TEST_TIMEOUT:-300} $b/tests/$t ${TEST_FILTER:-} > $O/test-$t.log 2>&1; echo "$t rc=$?"
    grep -E "^test |test result|panicked|FAILED|CONVRS_TEST" $O/test-$t.log | tail -30
  done
elif [ "$mode" = sanitize ]; then
  san=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer)
  IFS=';' read -ra specs <<< "$SAN_SPECS"
  for spec in "${specs[@]}"; do
    IFS=: read algo dt prec shape <<< "$spec"
    for tool in ${TOOLS:-memcheck racecheck synccheck}; do
      timeout 150 $san --tool $tool --error-exitcode 99 $b/convrs run --algo $algo --dtype $dt --precision $prec --shape $shape --layout ${SAN_LAYOUT:-nchw} --runs 1 --timing events >> $O/sanitize.log 2>&1
      echo "sanitize $algo $dt [$shape] $tool rc=$?"
    done
  done
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $O/sanitize.log | sort | uniq -c
elif [ "$mode" = bench ]; then
  algo_args() { for a in $1; do printf -- '--algo %s ' "$a"; done; }
  for set in $BENCH_SETS; do
    IFS=: read suite dt part <<< "$set"
    sname=$(basename $suite .csv)
    name=$sname-$dt${part:+-p${part/\//of}}
    timeout ${BENCH_TIMEOUT:-280} $b/convrs bench --suite $suite ${part:+--part $part} --dtype $dt --runs 20 --warmup 3 --search-seconds ${SEARCH:-1} \
      $(algo_args "$ALGOS") ${BENCH_ARGS:-} --json $O/$name.json > $O/$name.md 2>$O/$name.err
    echo "$name rc=$?"; grep -iE "geomean" $O/$name.md | head -20
  done
elif [ "$mode" = ncu ]; then
  ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu)
  timeout 200 $ncu --clock-control none -k regex:${NCU_KERNEL:-wgmma} --launch-skip ${NCU_SKIP:-0} --launch-count ${NCU_COUNT:-1} ${NCU_SECTIONS:---section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section LaunchStats} \
    $b/convrs run --algo ${NCU_ALGO:-wgmma_nchw_rows_persistent} --dtype ${NCU_DTYPE:-fp16} --precision ${NCU_PREC:-fma} --shape ${NCU_SHAPE:-32,256,56,56,128,1,1} --layout ${NCU_LAYOUT:-nchw} --runs ${NCU_RUNS:-1} --timing events > $O/ncu.txt 2>&1
  echo "ncu rc=$?"
  grep -E "^  [a-z_0-9]+.*\(|Duration|Memory Throughput|DRAM Through|Compute \(SM\)|Warp Cycles Per Issued|No Eligible|Registers Per|L2 Hit|L1/TEX Hit|Bank" $O/ncu.txt | head -${NCU_LINES:-20}
fi
done

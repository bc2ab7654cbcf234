# Dev, on the GPU machine: the register epilogue (bundle $BUNDLE). MODE: tests (TESTS), sanitize
# (fused problems on each in-register path), runs (convrs run, bare and fused, step 7 / 12),
# bench (BENCH_SETS "suite:dtype:part:epilogue" restricted to ALGOS).
set -u
O=$OUT
B=${BUNDLE:-target/gpu-r1}
eval "$(sed -n '/^torch_cudnn=/,/^fi$/p' $B/run-gpu.sh)"
b=$(mktemp -d); tar -C $b -xJf $B/payload.tar.xz
export CONVRS_COMMIT=$(cat $B/commit.txt)
export CONVRS_REQUIRE_GPU=1 CONVRS_REQUIRE_HOPPER=1
nvidia-smi --query-gpu=name --format=csv,noheader > $O/gpu.txt
for mode in $MODE; do
if [ "$mode" = tests ]; then
  for t in ${TESTS:-gpu_epilogue}; do
    timeout ${TEST_TIMEOUT:-240} $b/tests/$t ${TEST_FILTER:-} > $O/test-$t.log 2>&1; echo "$t rc=$?"
    grep -E "^test |test result|panicked|FAILED" $O/test-$t.log | tail -30
  done
elif [ "$mode" = sanitize ]; then
  san=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer)
  for spec in "wgmma_ws_tma_persistent:fp16:16,256,14,14,128,3,3 --layout nhwc --pad 1 --epilogue bias+residual+relu" \
              "wgmma_ws_tma_pingpong_m64:bf16:3,40,31,29,264,1,1 --layout nhwc --stride 2 --epilogue scale+bias+residual+relu6" \
              "wgmma_ws_tma_splitk:fp16:2,256,9,9,256,3,3 --layout nhwc --pad 1 --epilogue bias+residual+relu" \
              "wgmma_nchw1x1_persistent:fp16:3,64,17,24,64,1,1 --layout nchw --epilogue scale+bias+residual+relu" \
              "wgmma_ws_tma_persistent_tf32:fp32:2,96,11,11,72,3,3 --layout nhwc --pad 1 --precision tf32 --epilogue bias+residual+relu"; do
    algo=${spec%%:*}; rest=${spec#*:}; dt=${rest%%:*}; shape=${rest#*:}
    for tool in ${TOOLS:-memcheck racecheck}; do
      timeout 120 $san --tool $tool --error-exitcode 99 $b/convrs run --algo $algo --dtype $dt --shape $shape --runs 1 --timing events >> $O/sanitize.log 2>&1
      echo "sanitize $algo $dt [$shape] $tool rc=$?"
    done
  done
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $O/sanitize.log | sort | uniq -c
elif [ "$mode" = runs ]; then
  IFS=';' read -ra shapes <<< "${RUN_SHAPES:-8,64,112,112,128,3,3 --pad 1;8,128,28,28,512,1,1;8,256,28,28,512,3,3 --pad 1}"
  for algo in ${RUN_ALGOS:-wgmma_ws_tma_persistent}; do
    for shape in "${shapes[@]}"; do
      for bn in ${BNS:-auto}; do
        for ep in ${EPS:-none bias+relu bias+residual+relu}; do
          e=""; [ $ep != none ] && e="--epilogue $ep"
          if [ $bn = auto ]; then unset CONVRS_HOPPER_BN; else export CONVRS_HOPPER_BN=$bn; fi
          t=$(timeout 60 $b/convrs run --algo $algo --dtype fp16 --shape $shape --layout ${RUN_LAYOUT:-nhwc} $e --runs 50 2>&1 | grep -E "^time|rror" | head -1 | cut -c1-60)
          echo "$algo [$shape] bn=$bn $ep: $t"
        done
      done
    done
  done | tee $O/runs.txt
  unset CONVRS_HOPPER_BN
else
  algo_args() { for a in $1; do printf -- '--algo %s ' "$a"; done; }
  for set in $BENCH_SETS; do
    IFS=: read suite dt part ep <<< "$set"
    sname=$(basename $suite .csv)
    name=$sname-$dt${part:+-p${part/\//of}}${ep:+-${ep//+/-}}
    timeout ${BENCH_TIMEOUT:-280} $b/convrs bench --suite $suite ${part:+--part $part} --dtype $dt --runs 20 --warmup 3 --search-seconds ${SEARCH:-1} \
      $(algo_args "$ALGOS") ${ep:+--epilogue $ep} ${BENCH_ARGS:-} --json $O/$name.json > $O/$name.md 2>$O/$name.err
    echo "$name rc=$?"; grep -iE "geomean|summary" -A3 $O/$name.md | head -20
  done
fi
done
# MODE=ncu (run separately): one launch each of step 7 bare and fused (EPS), ncu's details.
if [ "$MODE" = ncu ]; then
  ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu)
  export CONVRS_HOPPER_BN=${NCU_BN:-128}
  for ep in ${EPS:-none alpha=2}; do
    e=""; [ $ep != none ] && e="--epilogue $ep"
    timeout 150 $ncu --clock-control none -k regex:wgmma --launch-count 1 --section SpeedOfLight --section WarpStateStats --section InstructionStats --section SchedulerStats --section LaunchStats --section SourceCounters \
      $b/convrs run --algo ${NCU_ALGO:-wgmma_ws_tma_persistent} --dtype fp16 --shape ${NCU_SHAPE:-8,64,112,112,128,3,3} --pad 1 --layout nhwc $e --runs 1 --timing events > $O/ncu-${ep//[+=]/_}.txt 2>&1
    echo "ncu $ep rc=$?"
    grep -E "Duration|Executed Instructions  |Issued Warp|No Eligible|Stall|Warp Cycles Per Issued|Registers Per|Local" $O/ncu-${ep//[+=]/_}.txt | head -20
  done
fi

# Dev, on the GPU machine: grouped convolution. MODE=tests: TESTS' GPU tests and the sanitizer
# on grouped problems; MODE=bench: BENCH_SETS ("suite:dtype:part:epilogue ...") restricted to ALGOS.
set -u
O=$OUT
eval "$(sed -n '/^torch_cudnn=/,/^fi$/p' ${BUNDLE:-target/gpu-bundle}/run-gpu.sh)"
b=$(mktemp -d); tar -C $b -xJf ${BUNDLE:-target/gpu-bundle}/payload.tar.xz
export CONVRS_COMMIT=$(cat ${BUNDLE:-target/gpu-bundle}/commit.txt)
export CONVRS_REQUIRE_GPU=1 CONVRS_REQUIRE_HOPPER=1
nvidia-smi --query-gpu=name --format=csv,noheader > $O/gpu.txt
for mode in $MODE; do
if [ "$mode" = tests ]; then
  for t in ${TESTS:-gpu_grouped}; do
    f=$b/tests/$t
    timeout ${TEST_TIMEOUT:-280} $f ${TEST_FILTER:-} > $O/test-$t.log 2>&1; echo "$t rc=$?"
    grep -E "^test |test result|panicked|FAILED|checked|matches" $O/test-$t.log | tail -40
  done
elif [ "$mode" = sanitize ]; then
  san=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer)
  for spec in "wgmma_ws_tma_persistent:fp16:2,128,23,21,128,3,3 --pad 1 --groups 32" "wgmma_ws_tma_pingpong_m64:bf16:3,96,15,13,96,3,3 --pad 1 --stride 2 --groups 4 --f32-out" \
              "wgmma_ws_tma_splitk:fp16:2,256,9,9,256,3,3 --pad 1 --groups 8 --epilogue bias+relu" "wgmma_ws_tma_persistent_tf32:fp32:2,256,11,11,256,3,3 --pad 1 --groups 32 --precision tf32"; do
    algo=${spec%%:*}; rest=${spec#*:}; dt=${rest%%:*}; shape=${rest#*:}
    for tool in memcheck racecheck synccheck; do
      timeout 120 $san --tool $tool --error-exitcode 99 $b/convrs run --algo $algo --dtype $dt --shape $shape --runs 1 --timing events >> $O/sanitize.log 2>&1
      echo "sanitize $algo $dt [$shape] $tool rc=$?"
    done
  done
  grep -E "ERROR SUMMARY" $O/sanitize.log | sort | uniq -c
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

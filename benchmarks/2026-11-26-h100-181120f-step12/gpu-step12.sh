# Dev, on the GPU machine: step 12 (64-row ping-pong). MODE=tests: its GPU tests and the
# sanitizer; MODE=bench: suites restricted to ALGOS (BENCH_SETS "suite:dtype:part:epilogue ...").
set -u
O=$OUT
eval "$(sed -n '/^torch_cudnn=/,/^fi$/p' ${BUNDLE:-target/gpu-bundle}/run-gpu.sh)"
b=$(mktemp -d); tar -C $b -xJf ${BUNDLE:-target/gpu-bundle}/payload.tar.xz
export CONVRS_COMMIT=$(cat ${BUNDLE:-target/gpu-bundle}/commit.txt)
export CONVRS_REQUIRE_GPU=1 CONVRS_REQUIRE_HOPPER=1
nvidia-smi --query-gpu=name --format=csv,noheader > $O/gpu.txt
if [ "${MODE}" = tests ]; then
  for t in ${TESTS:-gpu_wgmma gpu_epilogue}; do
    f=$(ls $b/tests/${t}* | head -1)
    timeout ${TEST_TIMEOUT:-280} $f ${TEST_FILTER:-} > $O/test-$t.log 2>&1; echo "$t rc=$?"
    grep -E "^test |test result|panicked|FAILED|checked" $O/test-$t.log | tail -12
  done
  [ "${SANITIZE:-1}" = 1 ] || exit 0
  san=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer)
  for spec in "wgmma_ws_tma_pingpong_m64:fp16:16,32,15,13,48,3,3 --pad 1" "wgmma_ws_tma_pingpong_m64:bf16:12,72,31,29,136,3,3 --pad 1 --f32-out" \
              "wgmma_ws_tma_pingpong_m64:fp16:3,40,31,29,264,1,1 --stride 2 --epilogue bias+residual+relu" "wgmma_ws_tma_pingpong_m64_tf32:fp32:12,72,31,29,136,3,3 --pad 1 --precision tf32" \
              "wgmma_ws_tma_pingpong_m64:fp16:16,256,14,14,256,3,3 --pad 1 --epilogue bias+silu"; do
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
    name=$suite-$dt${part:+-p${part/\//of}}${ep:+-${ep//+/-}}
    timeout ${BENCH_TIMEOUT:-280} $b/convrs bench --suite $suite ${part:+--part $part} --dtype $dt --runs 20 --warmup 3 --search-seconds 1 \
      $(algo_args "$ALGOS") ${ep:+--epilogue $ep} ${BENCH_ARGS:-} --json $O/$name.json > $O/$name.md 2>$O/$name.err
    echo "$name rc=$?"; grep -iE "geomean|summary" -A3 $O/$name.md | head -20
  done
fi

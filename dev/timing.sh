# Dev, on the GPU machine: the GPU tests of the bundle (TESTS= skips them), then `convrs run` of a few
# layers timed both ways (graph replays against single event-timed runs), then deepbench (DTYPES,
# default fp16; part PART of PARTS, default 1/2) with TIMING (default graph) through run-gpu.sh, so
# the newest cuDNN on the machine is the one loaded and the tables name the commit.
# Everything under $OUT; tables: python3 dev/show.py $OUT/...
set -u
b=$(mktemp -d); tar -C $b -xJf target/gpu-bundle/payload.tar.xz
if [ -n "${TESTS-1}" ]; then OUT=$OUT/tests STEPS=tests bash target/gpu-bundle/run-gpu.sh > $OUT/tests.log 2>&1; echo "tests rc=$?"; grep -E "FAILED|panicked" $OUT/tests.log | head; tail -2 $OUT/tests.log; fi
for s in "8,256,14,14,256,1,1 --algo wgmma_ws_tma_persistent" "16,512,7,7,512,3,3 --pad 1 --algo wgmma_ws_tma_splitk" "256,256,14,14,512,3,3 --pad 1 --algo wgmma_ws_tma_persistent"; do
  for t in graph events; do
    echo "$s $t: $($b/convrs run --dtype fp16 --shape $s --timing $t --runs 30 2>/dev/null | grep -E '^time')"
  done
done
for dt in ${DTYPES:-fp16}; do
  tag=$dt-${TIMING:-graph}-${PART:-1}
  STEPS=bench BENCH_SUITES=deepbench BENCH_DTYPES=$dt BENCH_PART=${PART:-1}/${PARTS:-2} BENCH_ARGS="--timing ${TIMING:-graph}" OUT=$OUT/$tag \
    bash target/gpu-bundle/run-gpu.sh > $OUT/bench-$tag.log 2>&1
  echo "bench $tag rc=$?"; grep -A2 "^| suite" $OUT/bench-$tag.log | tail -1
done

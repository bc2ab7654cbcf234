# Dev, on the GPU machine: the GPU tests of the bundle, then `convrs run` of a few layers timed both
# ways (graph replays against single event-timed runs), then BENCH (default: deepbench fp16 part
# PART of 2) with TIMING (default graph). Everything under $OUT; tables: python3 dev/show.py $OUT.
set -u
b=$(mktemp -d); tar -C $b -xJf target/gpu-bundle/payload.tar.xz
if [ -n "${TESTS:-1}" ]; then OUT=$OUT/tests STEPS=tests bash target/gpu-bundle/run-gpu.sh > $OUT/tests.log 2>&1; echo "tests rc=$?"; grep -E "FAILED|panicked" $OUT/tests.log | head; tail -2 $OUT/tests.log; fi
for s in "8,256,14,14,256,1,1 --algo wgmma_tma_nhwc" "16,512,7,7,512,3,3 --pad 1 --algo wgmma_sk_nhwc" "256,256,14,14,512,3,3 --pad 1 --algo wgmma_tma_nhwc"; do
  for t in graph events; do
    echo "$s $t: $($b/convrs run --dtype fp16 --shape $s --timing $t --runs 30 2>/dev/null | grep -E '^time')"
  done
done
for dt in ${DTYPES:-fp16}; do
  $b/convrs bench --suite ${SUITE:-deepbench} --dtype $dt --runs 20 --warmup 3 --search-seconds 1 --timing ${TIMING:-graph} --part ${PART:-1}/${PARTS:-2} --json $OUT/bench-$dt-${TIMING:-graph}-${PART:-1}.json > $OUT/bench-$dt-${TIMING:-graph}-${PART:-1}.md 2>$OUT/bench-$dt.err
  echo "bench $dt rc=$?"; grep -A4 "^| suite" $OUT/bench-$dt-${TIMING:-graph}-${PART:-1}.md
done

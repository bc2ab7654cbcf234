# Dev, on the GPU machine: GPU tests of the new bundle (TEST_FILTER), then a suite (SUITE, default the
# small-C subset) with ALGOS / ALGOS_BF16 for the new bundle and for an older CLI packed alone in
# target/gpu-bundle-old/payload.tar.xz (same run, same machine). Tables: python3 dev/show.py $OUT.
set -u
O=$OUT
for v in new old; do
  d=target/gpu-bundle; [ $v = old ] && d=target/gpu-bundle-old
  b=$(mktemp -d); tar -C $b -xJf $d/payload.tar.xz
  if [ $v = new ] && [ -n "${TEST_FILTER:-}" ]; then OUT=$O/tests STEPS=tests bash target/gpu-bundle/run-gpu.sh > $O/tests.log 2>&1; echo "tests rc=$?"; tail -3 $O/tests.log; fi
  for dt in ${DTYPES:-fp16}; do
    $b/convrs bench --suite ${SUITE:-dev/suites/deepbench-small-c.csv} --dtype $dt --runs ${RUNS:-20} --warmup 3 --search-seconds 1 --algo $(if [ $dt = bf16 ]; then echo ${ALGOS_BF16:-wmma_patch}; else echo ${ALGOS:-wmma_patch}; fi) --json $O/$v-$dt.json > $O/$v-$dt.md 2>&1
    echo "$v $dt rc=$?"
  done
done

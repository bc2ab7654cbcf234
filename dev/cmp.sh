# Dev, on the GPU machine: GPU tests of the new bundle (TEST_FILTER), then a suite (SUITE, default the
# small-C subset; PART=I/N for part of it) with ALGOS / ALGOS_BF16 for the new bundle and for an older
# CLI packed alone in target/gpu-bundle-old/payload.tar.xz (ALGOS_OLD / ALGOS_OLD_BF16 where the old
# CLI names the kernels otherwise), old first, same run, same machine. BENCH_ARGS go to both benches
# (e.g. --pytorch off). Tables: python3 dev/show.py $OUT.
set -u
O=$OUT
# The same cuDNN as run-gpu.sh loads (the newest on the machine), by running its own lines for it.
eval "$(sed -n '/^torch_cudnn=/,/^fi$/p' target/gpu-bundle/run-gpu.sh)"
algo_args() { for a in $1; do printf -- '--algo %s ' "$a"; done; }
for v in old new; do
  d=target/gpu-bundle; [ $v = old ] && d=target/gpu-bundle-old
  b=$(mktemp -d); tar -C $b -xJf $d/payload.tar.xz
  export CONVRS_COMMIT=$(cat $d/commit.txt 2>/dev/null || echo "$v bundle")
  if [ $v = new ] && [ -n "${TEST_FILTER:-}" ]; then OUT=$O/tests STEPS=tests bash target/gpu-bundle/run-gpu.sh > $O/tests.log 2>&1; echo "tests rc=$?"; tail -3 $O/tests.log; fi
  for dt in ${DTYPES:-fp16}; do
    if [ $dt = bf16 ]; then algos=${ALGOS_BF16:-wmma_patch}; [ $v = old ] && algos=${ALGOS_OLD_BF16:-$algos}
    else algos=${ALGOS:-wmma_patch}; [ $v = old ] && algos=${ALGOS_OLD:-$algos}; fi
    # shellcheck disable=SC2046
    $b/convrs bench --suite ${SUITE:-dev/suites/deepbench-small-c.csv} ${PART:+--part $PART} --dtype $dt --runs ${RUNS:-20} --warmup 3 --search-seconds 1 \
      $(algo_args "$algos") ${BENCH_ARGS:-} --json $O/$v-$dt.json > $O/$v-$dt.md 2>$O/$v-$dt.err
    echo "$v $dt rc=$?"
  done
done

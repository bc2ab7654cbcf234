# Dev (GPU): epilogue change: tests, memcheck, then old (f51ea73) vs new bundle on a suite with an epilogue.
set -u
O=$OUT
export CONVRS_REQUIRE_GPU=1 CONVRS_REQUIRE_HOPPER=1
eval "$(sed -n '/^torch_cudnn=/,/^fi$/p' target/gpu-bundle/run-gpu.sh)"
nb=$(mktemp -d); tar -C $nb -xJf target/gpu-bundle/payload.tar.xz
ob=$(mktemp -d); tar -C $ob -xJf target/gpu-bundle-old/payload.tar.xz
if [ -n "${TESTS:-}" ]; then
for t in gpu_epilogue gpu_wgmma; do
  f=$(ls $nb/tests/ | grep "^$t" | head -1)
  timeout 200 $nb/tests/$f > $O/$t.log 2>&1; echo "$t rc=$?"; grep -E "^test result|FAILED|panicked" $O/$t.log | head -8
done
san=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer)
for a in wgmma_ws_tma_persistent wgmma_ws_tma_pingpong wgmma_ws_tma_splitk; do for s in "8,16,48,48,64,3,3 --pad 1" "3,40,37,29,136,3,3 --pad 1 --stride 2"; do
  timeout 60 $san --tool memcheck --error-exitcode 99 $nb/convrs run --algo $a --dtype fp16 --shape $s --epilogue scale+bias+residual+silu --runs 1 --timing events >> $O/san.log 2>&1
  echo "memcheck $a [$s] rc=$? $(grep -E 'ERROR SUMMARY|check ' $O/san.log | tail -2 | tr '\n' ' ')"
done; done
fi
A="--algo wgmma_ws_tma_persistent --algo wmma_smallc --no-nchw-caller --dtype fp16 --runs 20 --warmup 3 --search-seconds 1"
for v in old new; do
  b=$nb; [ $v = old ] && b=$ob
  export CONVRS_COMMIT=$(cat target/gpu-bundle$([ $v = old ] && echo -old)/commit.txt)
  timeout ${TB:-150} $b/convrs bench $A $BENCH --json $O/$v.json > $O/$v.md 2> $O/$v.err; echo "$v rc=$?"
done

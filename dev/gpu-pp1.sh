# Dev (GPU): ping-pong correctness: gpu_wgmma + gpu_epilogue, then sanitizer on multi-tile shapes.
set -u
O=$OUT
b=$(mktemp -d); tar -C $b -xJf target/gpu-bundle/payload.tar.xz
export CONVRS_REQUIRE_GPU=1 CONVRS_REQUIRE_HOPPER=1
cat target/gpu-bundle/commit.txt
for t in gpu_wgmma gpu_epilogue; do
  f=$(ls $b/tests/ | grep "^$t" | head -1)
  timeout 200 $b/tests/$f > $O/$t.log 2>&1; echo "$t rc=$?"; grep -E "^test result|FAILED|panicked" $O/$t.log | head -8
done
san=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer)
one() { # algo-args shape-args ep tool
  echo "### $*" >> $O/san.log
  timeout 60 $san --tool $4 --error-exitcode 99 $b/convrs run --algo $1 --shape $2 $3 --runs 1 --timing events >> $O/san.log 2>&1
  echo "san [$1] [$2] [$3] $4 rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|SYNCCHECK SUMMARY|check ' $O/san.log | tail -2 | tr '\n' ' ')"
}
for s in "8,16,48,48,64,3,3 --pad 1" "16,8,40,40,128,1,1" "3,40,37,29,136,3,3 --pad 1 --stride 2"; do
  for ep in "" "--epilogue scale+bias+residual+silu"; do
    for tool in memcheck racecheck synccheck; do one "wgmma_ws_tma_pingpong --dtype fp16" "$s" "$ep" $tool; done
  done
done
for s in "8,16,48,48,64,3,3 --pad 1" "16,8,40,40,128,1,1"; do
  one "wgmma_ws_tma_pingpong --dtype bf16" "$s" "--epilogue bias+relu" memcheck
  one "wgmma_ws_tma_pingpong_tf32 --dtype fp32 --precision tf32" "$s" "--epilogue bias+gelu" memcheck
  one "wgmma_ws_tma_pingpong_tf32 --dtype fp32 --precision tf32" "$s" "" synccheck
done

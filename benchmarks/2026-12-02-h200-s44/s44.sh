# Device script of the forty-fourth session, run from the repository root:
# `bash benchmarks/2026-12-02-h200-s44/s44.sh PART...`. Bundle target/gpu-s44a is 480e590's CLI with
# the gpu_patch and gpu_epilogue test binaries (`wmma_patch_nchw`: wmma_patch on NCHW data as it is).
# PART: jit (`convrs info`: the fresh machine's JIT, into the CUDA cache the rest reads), patch
# (gpu_patch whole), epilogue (gpu_epilogue's `other_epilogues` tests: every non-Hopper fusing
# kernel), sanitize (wmma_patch_nchw under memcheck, racecheck, synccheck), bench (the few-channel
# first layers, NCHW caller against the NCHW baselines, EPI and DTYPES), resnet50 (SETS of
# "dtype:part", bias + residual + ReLU, the NCHW caller's kernels and both `wmma_patch` entries).
source benchmarks/2026-11-28-h100-fold/steps.sh
export CUDA_CACHE_MAXSIZE=4294967296
export BUNDLE=${BUNDLE:-target/gpu-s44a}
b=$(mktemp -d); tar -C $b -xJf $BUNDLE/payload.tar.xz
eval "$(sed -n '/^torch_cudnn=/,/^fi$/p' $BUNDLE/run-gpu.sh)"
export CONVRS_COMMIT=$(cat $BUNDLE/commit.txt) CONVRS_REQUIRE_GPU=1 CONVRS_REQUIRE_HOPPER=1
for part in "$@"; do
case $part in
jit)
  timeout 240 $b/convrs info > $R/w/jit.txt 2>&1; echo "jit rc=$?"; pack;;
patch|epilogue)
  bin=gpu_$part; filter=$([ $part = epilogue ] && echo other_epilogues)
  timeout ${TEST_TIMEOUT:-240} $b/tests/$bin $filter --test-threads 1 > $R/w/$bin.log 2>&1; echo "$bin rc=$?"
  grep -E "^test |test result|panicked|FAILED|random problems checked" $R/w/$bin.log | tail -30; pack;;
sanitize)
  san=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer)
  for spec in "bf16|2,3,19,17,12,3,3 --pad 1 --stride 2 --epilogue bias+residual+relu" "fp16|1,4,9,20,8,3,3 --pad 1" "bf16|2,3,40,40,64,7,7 --pad 3 --stride 2"; do
    IFS='|' read dt shape <<< "$spec"
    for tool in memcheck racecheck synccheck; do
      timeout 120 $san --tool $tool --error-exitcode 99 $b/convrs run --algo wmma_patch_nchw --dtype $dt --shape $shape --layout nchw --runs 1 --timing events >> $R/w/sanitize.log 2>&1
      echo "sanitize $dt [$shape] $tool rc=$?"
    done
  done
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $R/w/sanitize.log | sort | uniq -c; pack;;
bench)
  for dt in ${DTYPES:-bf16}; do
    for set in "--pad 3 --stride 2 --shape 32,3,224,224,64,7,7 --shape 8,3,224,224,64,7,7 --shape 1,3,224,224,64,7,7" "--pad 1 --stride 2 --shape 32,3,224,224,32,3,3 --shape 1,3,224,224,32,3,3" "--pad 1 --shape 16,3,224,224,64,3,3"; do
      n=$(echo $set | md5sum | cut -c1-6)
      timeout ${BENCH_TIMEOUT:-150} $b/convrs bench --dtype $dt --runs 20 --warmup 3 --search-seconds 1 --algo wmma_patch --algo wmma_patch_nchw --algo wmma_smallc \
        ${EPI:+--epilogue $EPI} --pytorch auto $set --json $R/w/bench-$dt-${EPI:-bare}-$n.json > $R/w/bench-$dt-${EPI:-bare}-$n.md 2>&1; echo "bench $dt ${EPI:-bare} [$set] rc=$?"
      grep -E "from NCHW|NCHW caller" $R/w/bench-$dt-${EPI:-bare}-$n.md | head -8
      xz $R/w/bench-$dt-${EPI:-bare}-$n.json; pack
    done
  done;;
resnet50)
  A=""; for a in wgmma_ws_tma_persistent wgmma_ws_tma_pingpong wgmma_ws_tma_pingpong_m64 wmma_patch wmma_patch_nchw wgmma_nchw_rows_persistent wgmma_ws_tma_persistent_to_nchw wgmma_ws_tma_pingpong_to_nchw wgmma_ws_tma_pingpong_m64_to_nchw wgmma_nchw_patch_persistent wgmma_nchw1x1_persistent wgmma_nchw1x1_pingpong_m64 wgmma_nchw1x1_pingpong; do A="$A --algo $a"; done
  for set in ${SETS:-bf16:1/2}; do
    IFS=: read dt p <<< "$set"; n=resnet50-$dt-p${p/\//of}
    timeout ${BENCH_TIMEOUT:-250} $b/convrs bench --suite resnet50 --part $p --dtype $dt --runs 20 --warmup 3 --search-seconds 1 $A --epilogue bias+residual+relu --pytorch auto --json $R/w/$n.json > $R/w/$n.md 2>$R/w/$n.err
    echo "$n rc=$?"; grep -E "geomean" $R/w/$n.md | head -3; xz $R/w/$n.json; pack
  done;;
esac
done

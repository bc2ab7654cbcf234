# Device script of the fifty-third session, run from the repository root:
# `bash benchmarks/2026-12-04-h200-s53/s53.sh PART...` with BUNDLE (default target/gpu-s52a,
# the kernels of bcb2c89). PART: resnet50 (SETS "fp16:1/2 ...", EPI, default none: the suite
# with every kernel, so Auto's picks, judged per caller layout); otherwise s52.sh's parts
# (jit, ncu, tests, sanitize, grouped, deepbench with DB_SETS). For the next session's bundle of
# `planes-staged-store.patch` (notes/hopper.md §37): runs (the three plane kernels and the
# NHWC-input twin on the two expanding 1x1 layers, bf16, graph-timed, each checked against
# the CPU reference), and sanitize on bare plane problems with H*W a multiple of 8 (SAN below).
source benchmarks/2026-11-28-h100-fold/steps.sh
export BUNDLE=${BUNDLE:-target/gpu-s52a}
export CUDA_CACHE_MAXSIZE=4294967296
b=$(mktemp -d); tar -C $b -xJf $BUNDLE/payload.tar.xz
# The newest cuDNN (PyTorch's) in process, as run-gpu.sh loads it, and the commit in the tables:
# c1-c3 ran `convrs bench` without either (so did s49 d2-d3 through s52 c3): cuDNN 9.14 in
# process, "commit unknown". Exported, so the parts run through s52.sh inherit them.
eval "$(sed -n '/^torch_cudnn=/,/^fi$/p' $BUNDLE/run-gpu.sh)"
export CONVRS_COMMIT=$(cat $BUNDLE/commit.txt)
# The sanitize part's problems unless SAN is set: the staged store's (bare, H*W a multiple of
# 8, tiles across images), ping-pong and m64.
export SAN="${SAN:-wgmma_nchw1x1_pingpong_m64:bf16:fma:3,64,28,28,264,1,1;wgmma_nchw1x1_pingpong:fp16:fma:2,128,8,8,136,1,1;wgmma_nchw1x1_pingpong_m64:fp16:fma:2,64,16,16,64,1,1}"
for part in "$@"; do
case $part in
resnet50)
  for set in ${SETS:-fp16:1/2}; do
    IFS=: read dt p <<< "$set"; n=resnet50-$dt-p${p/\//of}-${EPI:-none}
    timeout ${BENCH_TIMEOUT:-250} $b/convrs bench --suite resnet50 --part $p --dtype $dt --runs 20 --warmup 3 --search-seconds 1 --epilogue ${EPI:-none} --pytorch auto --json $R/w/$n.json > $R/w/$n.md 2>$R/w/$n.err
    echo "$n rc=$?"; grep -E "geomean" $R/w/$n.md | head -3; python3 dev/nchw_user_summary.py $R/w/$n.json | tail -4; xz $R/w/$n.json; pack
  done;;
runs)
  for shape in 32,128,28,28,512,1,1 32,64,56,56,256,1,1; do
    for a in wgmma_nchw1x1_pingpong_m64 wgmma_nchw1x1_pingpong wgmma_nchw1x1_persistent wgmma_ws_tma_pingpong_m64_to_nchw; do
      l=nchw; [ $a = wgmma_ws_tma_pingpong_m64_to_nchw ] && l=nhwc
      echo "$a $shape $l: $(timeout 60 $b/convrs run --algo $a --dtype bf16 --shape $shape --layout $l --runs 50 --timing graph 2>&1 | grep -E '^(time|check)' | tr -s ' ' | tr '\n' ' ')"
    done
  done | tee $R/w/runs.txt; pack;;
*)
  BUNDLE=$BUNDLE bash benchmarks/2026-12-04-h200-s52/s52.sh $part;;
esac
done

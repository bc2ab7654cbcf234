# Device script of the fifty-third session, run from the repository root:
# `bash benchmarks/2026-12-04-h200-s53/s53.sh PART...` with BUNDLE (default target/gpu-s52a,
# the kernels of bcb2c89). PART: resnet50 (SETS "fp16:1/2 ...", EPI, default none: the suite
# with every kernel, so Auto's picks, judged per caller layout); otherwise s52.sh's parts
# (jit, ncu, tests, sanitize, grouped, deepbench with DB_SETS).
source benchmarks/2026-11-28-h100-fold/steps.sh
export BUNDLE=${BUNDLE:-target/gpu-s52a}
export CUDA_CACHE_MAXSIZE=4294967296
b=$(mktemp -d); tar -C $b -xJf $BUNDLE/payload.tar.xz
# The newest cuDNN (PyTorch's) in process, as run-gpu.sh loads it, and the commit in the tables:
# c1-c3 ran `convrs bench` without either (so did s49 d2-d3 through s52 c3): cuDNN 9.14 in
# process, "commit unknown". Exported, so the parts run through s52.sh inherit them.
eval "$(sed -n '/^torch_cudnn=/,/^fi$/p' $BUNDLE/run-gpu.sh)"
export CONVRS_COMMIT=$(cat $BUNDLE/commit.txt)
for part in "$@"; do
case $part in
resnet50)
  for set in ${SETS:-fp16:1/2}; do
    IFS=: read dt p <<< "$set"; n=resnet50-$dt-p${p/\//of}-${EPI:-none}
    timeout ${BENCH_TIMEOUT:-250} $b/convrs bench --suite resnet50 --part $p --dtype $dt --runs 20 --warmup 3 --search-seconds 1 --epilogue ${EPI:-none} --pytorch auto --json $R/w/$n.json > $R/w/$n.md 2>$R/w/$n.err
    echo "$n rc=$?"; grep -E "geomean" $R/w/$n.md | head -3; python3 dev/nchw_user_summary.py $R/w/$n.json | tail -4; xz $R/w/$n.json; pack
  done;;
*)
  BUNDLE=$BUNDLE bash benchmarks/2026-12-04-h200-s52/s52.sh $part;;
esac
done

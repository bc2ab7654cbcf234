# Device script of the forty-fifth session, run from the repository root:
# `bash benchmarks/2026-12-02-h200-s45/s45.sh PART...` with BUNDLE (default target/gpu-s45a).
# PART: jit (`convrs info`: the fresh machine's JIT, into the CUDA cache the rest reads), ab (the
# NCHW-output kernels against their NHWC twins, bare and with bias + residual + ReLU, on SHAPES;
# cuDNN and PyTorch beside), ncu (NCU: "algo|shape|epilogue" ';'-separated, one profile each).
# (The session's calls also carried the first machine's JIT cache to the next ones, through
# CUDA_CACHE_PATH; it saved nothing, BENCHMARKS.md, and is left out here.)
source benchmarks/2026-11-28-h100-fold/steps.sh
export BUNDLE=${BUNDLE:-target/gpu-s45a}
export CUDA_CACHE_MAXSIZE=4294967296
b=$(mktemp -d); tar -C $b -xJf $BUNDLE/payload.tar.xz
eval "$(sed -n '/^torch_cudnn=/,/^fi$/p' $BUNDLE/run-gpu.sh)"
export CONVRS_COMMIT=$(cat $BUNDLE/commit.txt) CONVRS_REQUIRE_GPU=1 CONVRS_REQUIRE_HOPPER=1
for part in "$@"; do
case $part in
jit)
  s=$(date +%s); timeout 280 $b/convrs info > $R/w/jit.txt 2>&1; echo "jit rc=$? $(( $(date +%s) - s )) s"; pack;;
ab)
  A=""; for a in ${ALGOS:-wgmma_ws_tma_persistent wgmma_ws_tma_pingpong_m64 wgmma_ws_tma_persistent_to_nchw wgmma_ws_tma_pingpong_m64_to_nchw wgmma_nchw1x1_persistent wgmma_nchw1x1_pingpong_m64}; do A="$A --algo $a"; done
  S=""; for s in ${SHAPES:-32,64,56,56,256,1,1 32,128,28,28,512,1,1 32,256,14,14,1024,1,1 32,512,7,7,2048,1,1}; do S="$S --shape $s"; done
  for ep in ${EPIS:-none bias+residual+relu}; do
    n=ab-${DT:-bf16}-$ep-${TAG:-x}
    timeout ${BENCH_TIMEOUT:-200} $b/convrs bench --dtype ${DT:-bf16} --runs 20 --warmup 3 --search-seconds 0.5 $A $S --epilogue $ep --pytorch ${PYT:-auto} --json $R/w/$n.json > $R/w/$n.md 2>$R/w/$n.err
    echo "$n rc=$?"; python3 - $R/w/$n.json <<'PY'
import json, sys
for g in json.load(open(sys.argv[1]))['suites'][0]['groups']:
    ks = ' '.join(f"{e['name'].replace('wgmma_','')}={e['timing']['median_ms']*1000:.1f}" for e in g.get('kernels') or [] if e.get('timing') and e.get('passed'))
    u = g.get('nchw_user') or {}
    print(g['shape'][:34], ks, '| user', u.get('name', '').replace('wgmma_',''), round(u['timing']['median_ms']*1000, 1) if u.get('timing') else None)
PY
    xz $R/w/$n.json; pack
  done;;
ncu)
  ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu)
  IFS=';' read -ra specs <<< "$NCU"
  for spec in "${specs[@]}"; do
    IFS='|' read algo shape ep <<< "$spec"; tag=$(echo "$algo-$shape-$ep" | tr ',+' '_p')
    timeout 150 $ncu --clock-control none -k regex:${NCU_KERNEL:-wgmma} --launch-skip 2 --launch-count 1 \
      --section SpeedOfLight --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section WarpStateStats --section SchedulerStats --section LaunchStats --section Occupancy \
      $b/convrs run --algo $algo --dtype bf16 --shape $shape --epilogue ${ep:-none} --runs 3 --timing events > $R/w/ncu-$tag.txt 2>&1
    echo "ncu $tag rc=$?"
    grep -E "Duration|DRAM Through|Memory Throughput|Compute \(SM\)|Warp Cycles Per Issued|No Eligible|L2 Hit|Stall|stall" $R/w/ncu-$tag.txt | head -14
    pack
  done;;
esac
done

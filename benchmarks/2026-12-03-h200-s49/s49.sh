# Device script of the forty-ninth session, run from the repository root:
# `bash benchmarks/2026-12-03-h200-s49/s49.sh PART...` with BUNDLE (default target/gpu-s49b;
# c1-c3 ran s49a). PART: s48.sh's (jit, ncu, san17, tests, sanitize, ab, resnet50), its
# sanitizer problems the ones below unless SAN is set (c1's; d1 set SAN), and deepbench
# (DB_SETS "bf16:1/3 ...": every kernel, so Auto's picks, bare).
export BUNDLE=${BUNDLE:-target/gpu-s49b}
export SAN="${SAN:-wgmma_ws_tma_pingpong_m64_to_nchw:bf16:fma:2,64,12,12,136,3,3 --pad 1 --epilogue bias+residual+relu;wgmma_ws_tma_persistent_to_nchw:fp16:fma:2,40,16,16,72,3,3 --pad 1 --epilogue scale+bias+residual+silu;wgmma_ws_tma_pingpong_m64_to_nchw:bf16:fma:2,64,16,16,256,1,1;wgmma_ws_tma_persistent_to_nchw:bf16:fma:2,48,8,8,96,3,3 --pad 1 --epilogue bias+residual+relu;wgmma_ws_tma_persistent:fp16:fma:2,40,13,11,72,3,3 --pad 1 --epilogue bias+residual+gelu}"
parts=(); for p in "$@"; do [ "$p" = deepbench ] || parts+=("$p"); done
[ ${#parts[@]} -gt 0 ] && bash benchmarks/2026-12-03-h200-s48/s48.sh "${parts[@]}"
case " $* " in *" deepbench "*)
  source benchmarks/2026-11-28-h100-fold/steps.sh
  b=$(mktemp -d); tar -C $b -xJf $BUNDLE/payload.tar.xz
  for set in ${DB_SETS:-bf16:1/3}; do
    IFS=: read dt p <<< "$set"; n=deepbench-$dt-p${p/\//of}
    timeout ${BENCH_TIMEOUT:-400} $b/convrs bench --suite deepbench --part $p --dtype $dt --runs 20 --warmup 3 --search-seconds 1 --pytorch auto --json $R/w/$n.json > $R/w/$n.md 2>$R/w/$n.err
    echo "$n rc=$?"; grep -E "geomean" $R/w/$n.md | head -3; python3 dev/nchw_user_summary.py $R/w/$n.json | tail -4; xz $R/w/$n.json; pack
  done;;
esac

# Device script of the forty-ninth session, run from the repository root:
# `bash benchmarks/2026-12-03-h200-s49/s49.sh PART...` with BUNDLE (default target/gpu-s49a).
# PART: jit; ncu (NCU: "algo|shape|epilogue" ';'-separated, one profile each, with shared-memory
# wavefronts and conflicts, L2 write requests and every stall reason); san17 (step 17 under
# memcheck, racecheck and synccheck on a problem its plan takes); resnet50 (s44.sh's, SETS);
# tests (gpu_epilogue on the Hopper kernels whose stagings moved, gpu_wgmma on steps 16 and 17),
# sanitize (the stagings bare, fused, wide, narrow and short runs), ab (s45's ab on ABB bundles).
source benchmarks/2026-11-28-h100-fold/steps.sh
export BUNDLE=${BUNDLE:-target/gpu-s49b}
export CUDA_CACHE_MAXSIZE=4294967296
b=$(mktemp -d); tar -C $b -xJf $BUNDLE/payload.tar.xz
for part in "$@"; do
case $part in
jit)
  s=$(date +%s); timeout 280 $b/convrs info > $R/w/jit.txt 2>&1; echo "jit rc=$? $(( $(date +%s) - s )) s"; pack;;
ncu)
  ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu)
  M=l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,smsp__sass_inst_executed_op_shared_st.sum,smsp__sass_inst_executed_op_shared_ld.sum,smsp__sass_inst_executed_op_global_st.sum,lts__t_requests_srcunit_tex_op_write.sum,lts__t_sectors_srcunit_tex_op_write.sum,dram__bytes_write.sum,dram__bytes_read.sum,smsp__inst_executed.sum,gpu__time_duration.sum
  IFS=';' read -ra specs <<< "$NCU"
  for spec in "${specs[@]}"; do
    IFS='|' read algo shape ep <<< "$spec"; tag=$(echo "$algo-$shape-$ep" | tr ',+' '_p')
    timeout 120 $ncu --clock-control none -k regex:${NCU_KERNEL:-wgmma} --launch-skip 2 --launch-count 1 \
      --section SpeedOfLight --section WarpStateStats --metrics $M,regex:smsp__average_warps_issue_stalled_.*_per_issue_active.ratio \
      $b/convrs run --algo $algo --dtype bf16 --shape $shape --epilogue ${ep:-none} --runs 3 --timing events > $R/w/ncu-$tag.txt 2>&1
    echo "ncu $tag rc=$?"
    grep -E "gpu__time_duration.sum|wavefronts|bank_conflicts|inst_executed_op|lts__t_(req|sec)|dram__bytes|Warp Cycles Per Issued" $R/w/ncu-$tag.txt | awk '{print $1, $(NF)}' | head -16
    grep -E "stalled_" $R/w/ncu-$tag.txt | awk '$NF+0 > 0.3 {print $1, $NF}' | sed 's/smsp__average_warps_issue_stalled_//; s/_per_issue_active.ratio//'
    pack
  done;;
san17)
  san=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer)
  for spec in "bf16|2,16,16,19,40,3,3 --pad 1 --epilogue bias+residual+relu" "fp16|2,64,12,16,72,3,3 --pad 1"; do
    IFS='|' read dt shape <<< "$spec"
    for tool in memcheck racecheck synccheck; do
      timeout 120 $san --tool $tool --error-exitcode 99 $b/convrs run --algo wgmma_nchw_patch_persistent --dtype $dt --shape $shape --layout nchw --runs 1 --timing events >> $R/w/san17.log 2>&1
      echo "san17 $dt [$shape] $tool rc=$?"
    done
  done
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $R/w/san17.log | sort | uniq -c; pack;;
tests)
  S16=wgmma_ws_tma_persistent_to_nchw,wgmma_ws_tma_pingpong_to_nchw,wgmma_ws_tma_pingpong_m64_to_nchw,wgmma_nchw_patch_persistent
  step tests-ep MODE=tests CONVRS_TEST_KERNELS=$S16,wgmma_ws_tma_persistent,wgmma_ws_tma_pingpong,wgmma_ws_tma_pingpong_m64,wgmma_ws_tma_splitk TESTS=gpu_epilogue TEST_TIMEOUT=${TEST_TIMEOUT:-200}
  step tests-wg MODE=tests CONVRS_TEST_KERNELS=$S16 TESTS=gpu_wgmma TEST_TIMEOUT=${TEST_TIMEOUT:-200};;
sanitize)
  step sanitize MODE=sanitize SAN_LAYOUT=nchw SAN_SPECS="${SAN:-wgmma_ws_tma_pingpong_m64_to_nchw:bf16:fma:2,64,12,12,136,3,3 --pad 1 --epilogue bias+residual+relu;wgmma_ws_tma_persistent_to_nchw:fp16:fma:2,40,16,16,72,3,3 --pad 1 --epilogue scale+bias+residual+silu;wgmma_ws_tma_pingpong_m64_to_nchw:bf16:fma:2,64,16,16,256,1,1;wgmma_ws_tma_persistent_to_nchw:bf16:fma:2,48,8,8,96,3,3 --pad 1 --epilogue bias+residual+relu;wgmma_ws_tma_persistent:fp16:fma:2,40,13,11,72,3,3 --pad 1 --epilogue bias+residual+gelu}";;
ab)
  for bb in ${ABB:-s48b s48a}; do
    BUNDLE=target/gpu-$bb TAG=$bb bash benchmarks/2026-12-02-h200-s45/s45.sh ab
  done;;
resnet50)
  bash benchmarks/2026-12-02-h200-s44/s44.sh resnet50;;
esac
done
# (forty-ninth session) deepbench: DB_SETS "bf16:1/3 ..." with every kernel (Auto picks), bare.
case " $* " in *" deepbench "*)
  for set in ${DB_SETS:-bf16:1/3}; do
    IFS=: read dt p <<< "$set"; n=deepbench-$dt-p${p/\//of}
    timeout ${BENCH_TIMEOUT:-400} $b/convrs bench --suite deepbench --part $p --dtype $dt --runs 20 --warmup 3 --search-seconds 1 --pytorch auto --json $R/w/$n.json > $R/w/$n.md 2>$R/w/$n.err
    echo "$n rc=$?"; grep -E "geomean" $R/w/$n.md | head -3; python3 dev/nchw_user_summary.py $R/w/$n.json | tail -4; xz $R/w/$n.json; pack
  done;;
esac

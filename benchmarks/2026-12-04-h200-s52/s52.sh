# Device script of the fifty-second session, run from the repository root:
# `bash benchmarks/2026-12-04-h200-s52/s52.sh PART...` with BUNDLE (default target/gpu-s50b).
# PART: jit; ncu (NCU: "algo|shape|layout" ';'-separated: one profile each of the 14x14 plane
# kernels whose B tiles come by cp.async, their TMA-fed twins on 28x28, the NHWC kernel: stall
# reasons, the source lines that stall most, L1 and L2 traffic); then s50.sh's parts (tests,
# sanitize, grouped, deepbench).
source benchmarks/2026-11-28-h100-fold/steps.sh
export BUNDLE=${BUNDLE:-target/gpu-s50b}
export CUDA_CACHE_MAXSIZE=4294967296
b=$(mktemp -d); tar -C $b -xJf $BUNDLE/payload.tar.xz
for part in "$@"; do
case $part in
jit)
  s=$(date +%s); timeout 280 $b/convrs info > $R/w/jit.txt 2>&1; echo "jit rc=$? $(( $(date +%s) - s )) s"; pack;;
ncu)
  ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu)
  M=l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum,dram__bytes_read.sum,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active,gpu__time_duration.sum
  IFS=';' read -ra specs <<< "$NCU"
  for spec in "${specs[@]}"; do
    IFS='|' read algo shape layout <<< "$spec"; tag=$(echo "$algo-$shape-$layout" | tr ',+' '_p')
    timeout 150 $ncu --clock-control none -k regex:${NCU_KERNEL:-wgmma} --launch-skip 2 --launch-count 1 \
      --section SpeedOfLight --section WarpStateStats --section SourceCounters --metrics $M,regex:smsp__average_warps_issue_stalled_.*_per_issue_active.ratio \
      $b/convrs run --algo $algo --dtype bf16 --shape $shape --layout ${layout:-nchw} --runs 3 --timing events > $R/w/ncu-$tag.txt 2>&1
    echo "ncu $tag rc=$?"
    grep -E "gpu__time_duration.sum|ldgsts|wavefronts|bank_conflicts|lts__t_sec|dram__bytes|warps_active|Warp Cycles Per Issued" $R/w/ncu-$tag.txt | awk '{print $1, $(NF)}' | head -16
    grep -E "stalled_" $R/w/ncu-$tag.txt | awk '$NF+0 > 0.3 {print $1, $NF}' | sed 's/smsp__average_warps_issue_stalled_//; s/_per_issue_active.ratio//'
    pack
  done;;
*)
  BUNDLE=$BUNDLE bash benchmarks/2026-12-03-h200-s50/s50.sh $part;;
esac
done

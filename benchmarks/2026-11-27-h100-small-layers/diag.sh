# On the GPU machine: ncu durations and limits of our kernels beside PyTorch's (cuDNN) on the
# same layers. SPECS: ';'-separated "algo|layout|dtype|N,C,H,W,K,R,S|pad|stride|groups".
set -u
O=$OUT; B=${BUNDLE:-target/gpu-r5}; here=$(dirname $0)
eval "$(sed -n '/^torch_cudnn=/,/^fi$/p' $B/run-gpu.sh)"
b=$(mktemp -d); tar -C $b -xJf $B/payload.tar.xz
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu)
SEC="--section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis --section SchedulerStats"
IFS=';' read -ra specs <<< "$SPECS"
i=0
for spec in "${specs[@]}"; do
  IFS='|' read algo layout dt shape pad stride groups <<< "$spec"
  i=$((i+1)); f=$O/ncu-$i-$algo.txt
  echo "=== $spec" > $f
  if [ "$algo" = torch ]; then
    timeout 120 $ncu --clock-control none ${NCU_EXTRA:-} --profile-from-start off $SEC python3 $here/torch_one.py $shape $pad $stride $groups $layout $dt >> $f 2>&1
  else
    timeout 120 $ncu --clock-control none ${NCU_EXTRA:-} -c 12 -k regex:${NCU_KERNEL:-.} $SEC $b/convrs run --algo $algo --dtype $dt --shape $shape --pad $pad --stride $stride --groups $groups --layout $layout --runs 1 --timing events >> $f 2>&1
  fi
  echo "$spec rc=$?"
  grep -E '^  [a-zA-Z_].*\(|Duration|DRAM Throughput|Memory Throughput|Compute \(SM\)|Registers Per|Achieved Occ|Block Size|Grid Size|Warp Cycles Per Issued|No Eligible' $f | head -40
done

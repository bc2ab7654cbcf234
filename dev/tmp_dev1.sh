set -u
B=$(mktemp -d); tar -C $B -xJf target/gpu-bundle/payload.tar.xz
export CONVRS_REQUIRE_GPU=1 CONVRS_REQUIRE_HOPPER=1
for s in "2,32,20,20,16,3,3 --pad 1" "2,40,20,20,16,3,3 --pad 1" "8,64,56,56,64,3,3 --pad 1" "32,256,28,28,256,3,3 --pad 1" "2,256,14,14,512,3,3 --pad 1"; do
  r=$(timeout 60 $B/convrs run --algo wgmma_ws_tma_persistent_3xtf32 --dtype fp32 --shape $s --layout NHWC --runs 10 2>&1 | grep -E "rel L2|grid|^time" | sed 's/.*: \(wgmma[^ ]*\).*/\1/; s/(median.*//' | tr '\n' ' ')
  echo "$s => $r"
done | tee $OUT/runs.txt
timeout 300 $B/tests/gpu_wgmma > $OUT/gpu_wgmma.txt 2>&1; echo "gpu_wgmma rc=$?" >> $OUT/gpu_wgmma.txt
grep -E "test result|FAILED|panicked|tf32|rc=" -A1 $OUT/gpu_wgmma.txt | head -30

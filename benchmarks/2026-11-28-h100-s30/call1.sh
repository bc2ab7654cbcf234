# Dev, on the GPU machine, one call (thirtieth session, bundle h1): the wgmma row-offset probe
# (dev/wgmma_row_offset_probe.py), then the GPU tests every changed entry owes (the staging
# shared by store_fused and store_nchw changed every fusing entry's PTX; step 10 writing NCHW
# gained 128x64; the ping-pong entries' random-problem test owed since the twenty-ninth
# session), then sanitizers on the new tile and two staged epilogues. Uses the fold directory's
# gpu.sh and step harness (outputs tarred as they go: the device returns at most 8 files).
set -u
cd "$(dirname "$0")/../.."
export BUNDLE=${BUNDLE:-target/gpu-h1}
. benchmarks/2026-11-28-h100-fold/steps.sh
mkdir -p $R/w/probe; timeout 90 python3 dev/wgmma_row_offset_probe.py > $R/w/probe/probe.txt 2>&1; echo "probe rc=$?"; grep -E "verdict|ALL OK|FAILURES|control" $R/w/probe/probe.txt; pack
step tests MODE=tests "TESTS=${TESTS:-gpu_wgmma gpu_epilogue gpu_device_tensor}" TEST_TIMEOUT=${TEST_TIMEOUT:-330}
step san MODE=sanitize SAN_LAYOUT=nchw TOOLS="memcheck racecheck" "SAN_SPECS=wgmma_ws_tma_pingpong_to_nchw:fp16:fma:2,64,9,14,40,3,3 --pad 1;wgmma_ws_tma_persistent:bf16:fma:2,64,9,14,136,3,3 --pad 1 --bias --act silu --residual;wgmma_ws_tma_splitk:fp16:fma:2,256,7,7,72,3,3 --pad 1 --bias --act gelu"

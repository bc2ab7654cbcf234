# Dev, on the GPU machine: the paired fused epilogue (bundle target/gpu-b6) against main's (target/gpu-b4):
# gpu_epilogue and two sanitized fused runs of the new bundle, then resnet50 fused with step 7, old then new.
set -u
O=$OUT
eval "$(sed -n '/^torch_cudnn=/,/^fi$/p' target/gpu-b6/run-gpu.sh)"
export CONVRS_REQUIRE_GPU=1 CONVRS_REQUIRE_HOPPER=1
nvidia-smi --query-gpu=name --format=csv,noheader > $O/gpu.txt
for v in b6 b4; do mkdir -p /tmp/$v && tar -C /tmp/$v -xJf target/gpu-$v/payload.tar.xz; done
timeout 90 $(ls /tmp/b6/tests/gpu_epilogue* | head -1) > $O/test-gpu_epilogue.log 2>&1; echo "gpu_epilogue rc=$?"; grep -E "test result|panicked|FAILED" $O/test-gpu_epilogue.log
san=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer)
for spec in "wgmma_ws_tma_persistent:fp16:16,256,14,14,128,3,3 --pad 1 --epilogue bias+residual+relu" "wgmma_ws_tma_pingpong_m64:bf16:3,40,31,29,264,1,1 --stride 2 --epilogue scale+bias+residual+gelu"; do
  algo=${spec%%:*}; rest=${spec#*:}; dt=${rest%%:*}; shape=${rest#*:}
  for tool in memcheck racecheck; do
    timeout 60 $san --tool $tool --error-exitcode 99 /tmp/b6/convrs run --algo $algo --dtype $dt --shape $shape --runs 1 --timing events >> $O/sanitize.log 2>&1
    echo "sanitize $algo $dt [$shape] $tool rc=$?"
  done
done
for v in b4 b6; do
  export CONVRS_COMMIT=$(cat target/gpu-$v/commit.txt)
  timeout 150 /tmp/$v/convrs bench --suite resnet50 --dtype fp16 --runs 20 --warmup 3 --search-seconds 1 --algo wgmma_ws_tma_persistent \
    --epilogue bias+residual+relu --no-nchw-caller --pytorch off --json $O/$v-resnet50-brr.json > $O/$v-resnet50-brr.md 2>$O/$v.err
  echo "$v rc=$?"; grep -E "^\| resnet50" $O/$v-resnet50-brr.md | head -3
done

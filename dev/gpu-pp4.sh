# Dev (GPU): what was not measured: deepbench part 2/2 fp16 and part 1/2 bf16 with bias+ReLU (JSON after every shape).
set -u
O=$OUT
b=$(mktemp -d); tar -C $b -xJf target/gpu-bundle-old/payload.tar.xz
eval "$(sed -n '/^torch_cudnn=/,/^fi$/p' target/gpu-bundle/run-gpu.sh)"
export CONVRS_COMMIT=$(cat target/gpu-bundle-old/commit.txt)
A="--algo wgmma_ws_tma_persistent --algo wgmma_ws_tma_splitk --algo wmma_smallc --no-nchw-caller --runs 20 --warmup 3 --search-seconds 1 --epilogue bias+relu --suite deepbench"
timeout 250 $b/convrs bench $A --part 2/2 --dtype fp16 --json $O/db2-fp16.json > $O/db2-fp16.md 2> $O/db2-fp16.err; echo "db2 fp16 rc=$?"
timeout 250 $b/convrs bench $A --part 1/2 --dtype bf16 --json $O/db1-bf16.json > $O/db1-bf16.md 2> $O/db1-bf16.err; echo "db1 bf16 rc=$?"

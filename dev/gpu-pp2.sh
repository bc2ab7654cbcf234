# Dev (GPU): ping-pong vs persistent, same run, with cuDNN's fused graph and PyTorch eager.
set -u
O=$OUT
b=$(mktemp -d); tar -C $b -xJf target/gpu-bundle/payload.tar.xz
eval "$(sed -n '/^torch_cudnn=/,/^fi$/p' target/gpu-bundle/run-gpu.sh)"
export CONVRS_COMMIT=$(cat target/gpu-bundle/commit.txt)
A="--algo wgmma_ws_tma_persistent --algo wgmma_ws_tma_pingpong --all-kernels --no-nchw-caller --dtype fp16 --runs 20 --warmup 3 --search-seconds 1"
run() { n=$1; t=$2; shift 2; timeout $t $b/convrs bench $A "$@" --json $O/$n.json > $O/$n.md 2> $O/$n.err; echo "$n rc=$?"; }
run r50-brr 170 --suite resnet50 --epilogue bias+residual+relu
run db1-br 230 --suite deepbench --part 1/2 --epilogue bias+relu
run db1-bare 150 --suite deepbench --part 1/2

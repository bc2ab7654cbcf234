# Call 7 (bundle s31e, 925b3c9): bf16 deepbench part 2/3, call5's kernels and step 18.
BUNDLE=target/gpu-s31e SETS=deepbench:bf16:2/3 EXTRA=wgmma_nchw1x1_pingpong bash "$(dirname "$0")/call5.sh"

# Call 2 (bundle s31b, 50ef6cb: the octet map): died at the smoke, CUDA_ERROR_ILLEGAL_INSTRUCTION.
BUNDLE=target/gpu-s31b bash "$(dirname "$0")/planes.sh"

# Call 2 (bundle s31b, 50ef6cb: the octet map): died at the smoke with CUDA_ERROR_ILLEGAL_INSTRUCTION
# (c2/smoke/octets.txt: the smoke file was named so then).
BUNDLE=target/gpu-s31b bash "$(dirname "$0")/planes.sh"

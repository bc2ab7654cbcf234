# Call 1 (bundle s31a, 7dbff3a: whole planes by bulk copy, 2-byte gathers): results in c1.
BUNDLE=target/gpu-s31a NHWC_RUNS=1 bash "$(dirname "$0")/planes.sh"

# Call 4 (bundle s31d, b947bd4: whole planes, quads spread over the transposers): results in c4.
BUNDLE=target/gpu-s31d SAN3=1 GATE=1 bash "$(dirname "$0")/planes.sh"

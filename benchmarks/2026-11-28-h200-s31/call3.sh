# Call 3 (bundle s31c, 1400e02: whole planes, a quad of pixels a thread): results in c3.
BUNDLE=target/gpu-s31c SAN3=1 GATE=1 bash "$(dirname "$0")/planes.sh"

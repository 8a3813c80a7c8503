#!/usr/bin/env bash
# package.gpu_bundle: scripts/gpu-bundle packs this build for the GPU machine within its size
# limit (60 MiB: a device call carries 64), and the bundle's unpack step restores a libtessel.so
# that the bundled tools load (here, without a GPU: tessel-bench --help).
#   gpu_bundle_test.sh SOURCE_DIR BUILD_DIR WORK_DIR
set -euo pipefail
src=$1 build=$2 work=$3
mkdir -p "$work"
bundle="$work/bundle"
"$src/scripts/gpu-bundle" "$build" "$bundle"
[ -f "$bundle/libtessel.so.gz" ] || { echo "FAIL: no libtessel.so.gz in the bundle"; exit 1; }
[ ! -e "$bundle/libtessel.so" ] || { echo "FAIL: libtessel.so travels uncompressed"; exit 1; }
"$bundle/unpack"
[ -f "$bundle/libtessel.so" ] || { echo "FAIL: unpack did not restore libtessel.so"; exit 1; }
cmp -s "$bundle/libtessel.so" <(gzip -dc "$bundle/libtessel.so.gz") || { echo "FAIL: restored library differs"; exit 1; }
"$bundle/unpack"  # again: nothing to do
LD_LIBRARY_PATH="$bundle" "$bundle/tessel-bench" --help | grep -q "usage: tessel-bench" ||
  { echo "FAIL: the bundled tessel-bench does not run from the unpacked bundle"; exit 1; }
rm -rf "$bundle"
echo "PASS"

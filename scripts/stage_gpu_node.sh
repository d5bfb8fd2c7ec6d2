#!/usr/bin/env bash
# Stages what a GPU node without our build dependencies needs into .stage/ (git-ignored): the CUDA build's
# binaries, its GPU tests and benchmarks, the libraries the node lacks, and Fashion-MNIST.
# Usage: scripts/stage_gpu_node.sh [BUILD_DIR]   (default build-cuda, configured with -DSCALEBENCH_CUDA=ON)
# A call to the node carries at most 64 MiB, so the data goes to .stage-data/, carried by a second call
# while .stage/ stays on the warm machine. The CPU BLAS is the small reference one (the GPU runs need
# BLAS only for the CPU side of the tests).
set -euo pipefail
build=${1:-build-cuda}
stage=.stage
rm -rf "$stage" .stage-data && mkdir -p "$stage/bin" "$stage/tests" "$stage/lib" .stage-data/fashion-mnist
cp "$build/scalebench" "$stage/bin/"
for t in "$build"/tests/gpu/test_* "$build"/tests/test_reference_fixture "$build"/tests/reference/dump_initial_weights \
         ; do
  [[ $t == *timing* ]] && continue
  [[ -x $t && ! -d $t ]] && cp "$t" "$stage/tests/"
done
strip --strip-unneeded "$stage"/bin/* "$stage"/tests/* 2>/dev/null || true
for lib in libhdf5_serial.so.103 libsz.so.2 libaec.so.0 libgfortran.so.5 libquadmath.so.0 libbenchmark.so.1; do
  [[ -e /lib/x86_64-linux-gnu/$lib ]] && cp -L "/lib/x86_64-linux-gnu/$lib" "$stage/lib/"
done
cp -L /usr/lib/x86_64-linux-gnu/blas/libblas.so.3 "$stage/lib/libopenblas.so.0"
cp /usr/share/datasets/fashion-mnist/*.gz .stage-data/fashion-mnist/
du -sh "$stage" .stage-data

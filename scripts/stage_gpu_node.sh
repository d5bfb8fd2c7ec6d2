#!/usr/bin/env bash
# Stages what a GPU node without our build dependencies needs into .stage/ (git-ignored): the CUDA build's
# binaries, its GPU tests and benchmarks, the libraries the node lacks, and Fashion-MNIST.
# Usage: scripts/stage_gpu_node.sh [BUILD_DIR]   (default build-cuda, configured with -DSCALEBENCH_CUDA=ON)
set -euo pipefail
build=${1:-build-cuda}
stage=.stage
rm -rf "$stage" && mkdir -p "$stage/bin" "$stage/tests" "$stage/lib" "$stage/data/fashion-mnist"
cp "$build/scalebench" "$stage/bin/"
for t in "$build"/tests/gpu/test_* "$build"/tests/test_reference_fixture "$build"/tests/reference/dump_initial_weights \
         "$build"/bench/bench_cuda_layers; do
  [[ -x $t && ! -d $t ]] && cp "$t" "$stage/tests/"
done
strip --strip-unneeded "$stage"/bin/* "$stage"/tests/* 2>/dev/null || true
for lib in libhdf5_serial.so.103 libsz.so.2 libaec.so.0 libgfortran.so.5 libquadmath.so.0 libbenchmark.so.1; do
  [[ -e /lib/x86_64-linux-gnu/$lib ]] && cp -L "/lib/x86_64-linux-gnu/$lib" "$stage/lib/"
done
cp -L /usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0 "$stage/lib/"
cp /usr/share/datasets/fashion-mnist/*.gz "$stage/data/fashion-mnist/"
du -sh "$stage"

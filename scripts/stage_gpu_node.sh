#!/usr/bin/env bash
# Stages what a GPU node without scalebench's build dependencies needs (git-ignored folders): the CUDA
# build's binary and GPU tests, the libraries of this machine that such a node lacks, and Fashion-MNIST.
# scripts/gpu_node_env.sh (sourced by scripts/gpu_node_tests.sh, scripts/gpu_node_faults.sh and
# bench/gpu_node.sh) finds them there. cuDNN, NCCL and the CUDA runtime are not staged: the node has
# them, system-wide or in PyTorch's wheels (SCALEBENCH_GPU_LIBS, see gpu_node_env.sh).
#
# Usage: scripts/stage_gpu_node.sh [BUILD_DIR]   (default build-cuda, configured with -DSCALEBENCH_CUDA=ON)
# Environment (defaults in brackets):
#   SCALEBENCH_STAGE        the binaries, tests and libraries                       [.stage]
#   SCALEBENCH_STAGE_DATA   the data; kept apart so that it can be copied once      [.stage-data]
#   SCALEBENCH_FMNIST       the Fashion-MNIST IDX files to copy                     [/usr/share/datasets/fashion-mnist]
#   SCALEBENCH_STAGE_LIBS   names (prefixes) of the libraries to copy, as the binary's ldd resolves them
#                           [libhdf5_serial libsz libaec libgfortran libquadmath libbenchmark libjpeg libpng16]
#   SCALEBENCH_STAGE_ARCHIVE  also pack the stage as STAGE.tar.xz (about a fiftieth of its size) for a copy
#                           to the node in one piece; gpu_node_env.sh unpacks it where STAGE is missing [0]
#   SCALEBENCH_STAGE_TESTS  1: stage the GPU tests; 0: the binaries alone, a stage small enough to copy with the
#                           data for measurements (bench/gpu_node.sh, make run)                       [1]
#   SCALEBENCH_STAGE_BLAS   a BLAS to stage as libopenblas.so.0: the CPU side of the GPU tests needs only a
#                           small one [Debian's reference BLAS (libblas3) beside the binary's OpenBLAS,
#                           else that OpenBLAS]
set -euo pipefail
shopt -s nullglob
build=${1:-build-cuda}
stage=${SCALEBENCH_STAGE:-.stage}
data=${SCALEBENCH_STAGE_DATA:-.stage-data}
fmnist=${SCALEBENCH_FMNIST:-/usr/share/datasets/fashion-mnist}
read -r -a lib_names <<< "${SCALEBENCH_STAGE_LIBS:-libhdf5_serial libsz libaec libgfortran libquadmath libbenchmark libjpeg libpng16}"

die() { echo "stage_gpu_node.sh: $*" >&2; exit 2; }
[[ -x $build/scalebench ]] || die "no scalebench in '$build'; build it with the CUDA backend (cmake -DSCALEBENCH_CUDA=ON) or name its folder"
fmnist_files=("$fmnist"/*-idx*-ubyte*)
[[ ${#fmnist_files[@]} -gt 0 ]] ||
  die "no Fashion-MNIST IDX files in '$fmnist'; install dataset-fashion-mnist or set SCALEBENCH_FMNIST"

rm -rf "$stage" "$data" && mkdir -p "$stage/bin" "$stage/tests" "$stage/lib" "$data/fashion-mnist"
cp "$build/scalebench" "$stage/bin/"
# The per-layer profile (bench/layer_profile.cpp), where the build has it.
if [[ -x $build/bench/layer_profile ]]; then cp "$build/bench/layer_profile" "$stage/bin/"; fi
# The kernel timeline library (bench/kernel_trace.cpp), where the build has it; the node has CUPTI.
if [[ -f $build/bench/libkernel_trace.so ]]; then cp "$build/bench/libkernel_trace.so" "$stage/lib/"; fi
# The NVTX recorder of tests/nvtx, which the nvtx part of scripts/gpu_node_tests.sh loads, where the build has it.
if [[ -f $build/tests/nvtx/libsb_nvtx_recorder.so ]]; then mkdir -p "$stage/nvtx" && cp "$build/tests/nvtx/libsb_nvtx_recorder.so" "$stage/nvtx/"; fi
test_files=()
if [[ ${SCALEBENCH_STAGE_TESTS:-1} != 0 ]]; then
  test_files=("$build"/tests/gpu/test_* "$build"/tests/test_reference_fixture "$build"/tests/reference/dump_initial_weights)
fi
for t in "${test_files[@]}"; do
  [[ $t == *timing* ]] && continue
  [[ -x $t && ! -d $t ]] && cp "$t" "$stage/tests/"
done
staged=("$stage"/bin/* "$stage"/tests/*)
strip --strip-unneeded "${staged[@]}" 2>/dev/null || true

# The libraries named, where this machine's loader resolves them for the staged programs.
resolved=$(ldd "${staged[@]}" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u)
for name in "${lib_names[@]}"; do
  while read -r soname path; do
    [[ -n $soname ]] && cp -L "$path" "$stage/lib/$soname"
  done < <(awk -v n="$name" 'index($1, n ".so") == 1' <<< "$resolved")
done
openblas=$(awk '$1 == "libopenblas.so.0" {print $2; exit}' <<< "$resolved")
blas=${SCALEBENCH_STAGE_BLAS:-}
if [[ -z $blas && -n $openblas ]]; then
  # Debian keeps the reference BLAS (libblas3) in blas/ beside OpenBLAS's own folder.
  lib_dir=$(dirname "$(dirname "$openblas")")
  blas=$openblas
  [[ -e $lib_dir/blas/libblas.so.3 ]] && blas=$lib_dir/blas/libblas.so.3
fi
if [[ -n $blas ]]; then cp -L "$blas" "$stage/lib/libopenblas.so.0"; fi

cp "${fmnist_files[@]}" "$data/fashion-mnist/"
if [[ ${SCALEBENCH_STAGE_ARCHIVE:-0} == 1 ]]; then
  # One stream with a dictionary larger than a test binary: the tests share most of their bytes (the same
  # static libraries), which a dictionary that spans several of them stores once (about a fifth of -6's size).
  tar -C "$(dirname "$stage")" -cf - "$(basename "$stage")" | xz -T1 --lzma2=preset=6,dict=192MiB > "$stage.tar.xz.tmp" &&
    mv "$stage.tar.xz.tmp" "$stage.tar.xz"
  du -sh "$stage.tar.xz"
fi
du -sh "$stage" "$data"

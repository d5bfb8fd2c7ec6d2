#!/usr/bin/env bash
# Configures, builds and, with --prefix, installs scalebench: the one build recipe that README.md's
# cluster build and the container images (jobs/container/) run. Arguments that start with -D go to
# CMake's configure step unchanged (-DCMAKE_CUDA_ARCHITECTURES=90, -DHDF5_ROOT=..., see README.md).
#
# Usage: scripts/build.sh [--build-dir DIR] [--jobs N] [--prefix DIR] [-DNAME=VALUE ...]
#   --build-dir DIR  CMake's build folder                       [build, in the current folder]
#   --jobs N         parallel compile jobs                      [every core: nproc]
#   --prefix DIR     then install the program into DIR/bin      [no install]
set -euo pipefail
source_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=build
jobs=$(nproc 2>/dev/null || echo 2)
prefix=
cmake_args=()

usage() { sed -n 's/^# \{0,1\}//; 6,9p' "${BASH_SOURCE[0]}" >&2; exit "${1:-2}"; }
needs_value() {
  [[ $# -ge 2 && -n $2 ]] || { echo "build.sh: $1 needs a value" >&2; usage; }
}
while [[ $# -gt 0 ]]; do
  case $1 in
    --build-dir) needs_value "$@"; build_dir=$2; shift 2 ;;
    --jobs) needs_value "$@"; jobs=$2; shift 2 ;;
    --prefix) needs_value "$@"; prefix=$2; shift 2 ;;
    -D?*) cmake_args+=("$1"); shift ;;
    -h|--help) usage 0 ;;
    *) echo "build.sh: unknown argument '$1'; CMake options are passed as -DNAME=VALUE" >&2; usage ;;
  esac
done
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "build.sh: --jobs must be a positive whole number (got '$jobs')" >&2; exit 2; }

cmake -S "$source_dir" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release "${cmake_args[@]}"
cmake --build "$build_dir" -j "$jobs"
if [[ -n $prefix ]]; then
  cmake --install "$build_dir" --prefix "$prefix"
fi

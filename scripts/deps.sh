#!/usr/bin/env bash
# Checks what the build and the demo need by capability, not by package name: commands on PATH, headers the
# compiler finds, Python modules that import, and the data set. Only what is really missing is installed,
# with apt-get (as root or with passwordless sudo); elsewhere the exact command is printed. A machine whose
# tools come from modules, a virtual environment or pip (a GPU node with PyTorch, say) needs no package.
#
# usage: scripts/deps.sh [program|run|test|bench]   (default: test, which needs the most)
#   program  what builds the scalebench program
#   run      program, and what `make run` needs: the report's Python modules, and Fashion-MNIST unless
#            DEMO_DATA names a folder of its IDX files
#   test     program, GoogleTest, the Python modules and Fashion-MNIST
#   bench    program and Google Benchmark
# Environment: DEMO_DATA (see run), SCALEBENCH_EXTRA_PACKAGES (Debian packages some targets add, checked by name).
set -euo pipefail
goal=${1:-test}
case $goal in program | run | test | bench) ;; *)
  echo "scalebench deps: unknown goal '$goal'; give program, run, test or bench" >&2; exit 2 ;;
esac

missing=()      # Debian packages that provide what is missing
missing_why=()  # what each one is missing for, in the same order
need() { missing+=("$1"); missing_why+=("$2"); }

# Headers (space-separated, included in that order) the C++ compiler finds, on its own paths (CPATH and
# module environments included) or in the folders Debian puts them in.
have_header() {
  local headers=$1; shift
  local dirs=("$@") flags=()
  for d in "${dirs[@]}"; do flags+=("-I$d"); done
  local compiler
  compiler=$(command -v c++ || command -v g++ || true)
  [[ -n $compiler ]] || return 1
  printf '#include <%s>\n' $headers | "$compiler" -E -x c++ "${flags[@]}" - >/dev/null 2>&1
}
# The report's modules, missing from every python3 that could run it: the one on PATH, or /usr/bin/python3,
# under which the scripts run themselves again when the first lacks them (analysis/system_python.py).
# Prints the missing ones of the python3 that lacks fewest.
missing_python_modules() {
  local python best="$*" left
  for python in "$(command -v python3 || true)" /usr/bin/python3; do
    [[ -x $python ]] || continue
    left=$("$python" -c 'import importlib.util, sys
print(" ".join(m for m in sys.argv[1:] if importlib.util.find_spec(m) is None))' "$@" 2>/dev/null) || continue
    [[ ${#left} -lt ${#best} ]] && best=$left
  done
  echo "$best"
}
# CMake 3.24 or newer (CMakeLists.txt's minimum).
have_cmake() {
  command -v cmake >/dev/null 2>&1 || return 1
  local version
  version=$(cmake --version | awk 'NR == 1 {print $3}')
  [[ $(printf '%s\n3.24\n' "$version" | sort -V | head -1) == 3.24 ]]
}

multiarch=$(gcc -print-multiarch 2>/dev/null || true)
command -v c++ >/dev/null 2>&1 || command -v g++ >/dev/null 2>&1 || need build-essential "a C++ compiler"
command -v make >/dev/null 2>&1 || need make "make"
have_cmake || need cmake "CMake 3.24 or newer"
command -v pkg-config >/dev/null 2>&1 || need pkg-config "pkg-config (CMake finds OpenBLAS through it)"
command -v mpicxx >/dev/null 2>&1 || command -v mpic++ >/dev/null 2>&1 || need libopenmpi-dev "MPI's compiler wrapper (mpicxx)"
command -v mpirun >/dev/null 2>&1 || need openmpi-bin "MPI's launcher (mpirun)"
have_header hdf5.h /usr/include/hdf5/serial || need libhdf5-dev "HDF5's C headers (hdf5.h)"
have_header zlib.h || need zlib1g-dev "zlib's headers (zlib.h)"
# OpenBLAS, not any cblas.h: netlib's reference BLAS (libblas-dev, which liblapack-dev brings) has one too,
# but sums in plain order, outside the CPU tests' fp32 tolerances, and many times slower.
have_header "cblas.h openblas_config.h" /usr/include/openblas "/usr/include/${multiarch:-x86_64-linux-gnu}/openblas-pthread" ||
  need libopenblas-dev "OpenBLAS (cblas.h with openblas_config.h)"
have_header cstdio || need build-essential "the C++ standard headers"
# jpeglib.h needs the declarations of stdio.h before it.
have_header "cstdio jpeglib.h" || need libjpeg-dev "libjpeg-turbo's headers (jpeglib.h)"
have_header png.h || need libpng-dev "libpng's headers (png.h)"
command -v python3 >/dev/null 2>&1 || need python3 "python3"

if [[ $goal == run || $goal == test ]]; then
  declare -A debian_module=([numpy]=python3-numpy [h5py]=python3-h5py [matplotlib]=python3-matplotlib [PIL]=python3-pil)
  for module in $(missing_python_modules numpy h5py matplotlib PIL); do
    need "${debian_module[$module]}" "the Python module $module (python3 -c 'import $module')"
  done
  fmnist=/usr/share/datasets/fashion-mnist
  if [[ $goal == test || -z ${DEMO_DATA:-} ]]; then
    [[ -d $fmnist ]] || need dataset-fashion-mnist "Fashion-MNIST in $fmnist (or make run DEMO_DATA=DIR)"
  fi
fi
if [[ $goal == test ]]; then
  have_header gtest/gtest.h || need libgtest-dev "GoogleTest (gtest/gtest.h)"
  have_header gmock/gmock.h || need libgmock-dev "GoogleMock (gmock/gmock.h)"
fi
if [[ $goal == bench ]]; then
  have_header benchmark/benchmark.h || need libbenchmark-dev "Google Benchmark (benchmark/benchmark.h)"
fi
read -r -a extra <<< "${SCALEBENCH_EXTRA_PACKAGES:-}"
for p in "${extra[@]}"; do
  [[ $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true) == "install ok installed" ]] || need "$p" "$p"
done

[[ ${#missing[@]} -eq 0 ]] && exit 0

echo "scalebench deps: missing for '$goal':" >&2
for i in "${!missing[@]}"; do echo "  ${missing_why[$i]}  (Debian/Ubuntu package ${missing[$i]})" >&2; done
read -r -a packages <<< "$(printf '%s\n' "${missing[@]}" | sort -u | tr '\n' ' ')"
if ! command -v apt-get >/dev/null 2>&1; then
  echo "scalebench deps: this is not a Debian/Ubuntu system; install their equivalents" \
       "(on a cluster: module load for MPI, HDF5, CUDA, cuDNN, NCCL; README.md, 'Building on a cluster')" >&2
  exit 1
fi
if [[ $(id -u) -eq 0 ]]; then
  sudo_cmd=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  sudo_cmd=(sudo)
else
  echo "scalebench deps: cannot install packages without root. Run:" >&2
  echo "  sudo apt-get update && sudo apt-get install -y ${packages[*]}" >&2
  exit 1
fi
echo "scalebench deps: installing ${packages[*]}"
export DEBIAN_FRONTEND=noninteractive
if ! "${sudo_cmd[@]}" apt-get update -qq || ! "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${packages[@]}"; then
  echo "scalebench deps: apt-get could not install ${packages[*]}. Install them (or their equivalents), then run make again:" >&2
  echo "  apt-get update && apt-get install -y ${packages[*]}" >&2
  exit 1
fi

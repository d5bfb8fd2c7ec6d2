#!/usr/bin/env bash
# Checks the Debian/Ubuntu packages scalebench needs; installs the missing ones with apt-get when it can
# (root, or passwordless sudo), and otherwise prints the exact command to run. libjpeg-dev is libjpeg-turbo on
# both: Debian's libjpeg62-turbo-dev, Ubuntu's libjpeg-turbo8-dev.
set -euo pipefail

packages=(build-essential cmake pkg-config libopenmpi-dev openmpi-bin libhdf5-dev zlib1g-dev googletest
          libgtest-dev libbenchmark-dev libopenblas-dev libjpeg-dev libpng-dev python3 python3-numpy
          python3-h5py python3-matplotlib python3-pil dataset-fashion-mnist)
# Extra packages that only some targets need, e.g. SCALEBENCH_EXTRA_PACKAGES="slurmctld slurmd".
read -r -a extra <<< "${SCALEBENCH_EXTRA_PACKAGES:-}"
packages+=("${extra[@]}")

if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "scalebench: this is not a Debian/Ubuntu system; install the equivalents of: ${packages[*]}" >&2
  echo "            (on a cluster: module load for MPI, HDF5, CUDA, cuDNN, NCCL; see README.md)" >&2
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

echo "scalebench: installing missing packages: ${missing[*]}"
if [[ $(id -u) -eq 0 ]]; then
  sudo_cmd=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  sudo_cmd=(sudo)
else
  echo "scalebench: cannot install packages without root. Run:" >&2
  echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
if ! "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"; then
  echo "scalebench: apt-get could not install: ${missing[*]}. Install them, then run make again." >&2
  exit 1
fi

#!/usr/bin/env bash
# `make run`: a short data-parallel training of mnist-cnn on Fashion-MNIST with NP ranks, on the GPU
# when one is visible (and the CUDA backend was built), otherwise on the CPU. Writes results/demo.h5
# and prints the epoch table.
set -euo pipefail
build=${1:-build}
np=${2:-2}
exe="$build/scalebench"
mpirun_flags=(--oversubscribe)
[[ $(id -u) -eq 0 ]] && mpirun_flags+=(--allow-run-as-root)

device=cpu
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 && "$exe" info --device cuda >/dev/null 2>&1; then
  device=cuda
fi
args=(train --model mnist-cnn --data fashion-mnist --epochs 1 --batch-size 64 --optimizer adadelta --lr 1.0
      --device "$device" --out results/demo.h5)
if [[ $device == cpu ]]; then
  # Keeps the demo under two minutes on a 2-core machine: 12,000 of the 60,000 training images.
  args+=(--train-limit 12000)
fi
echo "scalebench demo: mpirun -np $np $exe ${args[*]}"
rm -f results/demo.h5
mpirun "${mpirun_flags[@]}" -np "$np" "$exe" "${args[@]}"
echo
python3 analysis/report.py results/demo.h5 --table-only

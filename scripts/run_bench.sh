#!/usr/bin/env bash
# `make bench` (docs/benchmarks.md): the CPU micro-benchmarks, the CUDA ones where a GPU is visible, and
# scalebench's own CPU training throughput on synthetic mnist-cnn data. Usage: run_bench.sh [BUILD_DIR].
# Extra Google Benchmark flags come from $BENCH_ARGS, e.g. BENCH_ARGS=--benchmark_filter=conv make bench.
set -euo pipefail
build=${1:-build}
read -r -a bench_args <<< "${BENCH_ARGS:-}"
mpirun_flags=(--oversubscribe)
[[ $(id -u) -eq 0 ]] && mpirun_flags+=(--allow-run-as-root)

section() { printf '\n=== %s ===\n' "$1"; }

if [[ -x $build/bench/bench_cpu_layers ]]; then
  section "CPU layers and optimizers (bench_cpu_layers)"
  "$build/bench/bench_cpu_layers" "${bench_args[@]}"
else
  echo "run_bench.sh: $build/bench/bench_cpu_layers is not built: install Google Benchmark" \
       "(apt-get install libbenchmark-dev), then reconfigure and build $build." >&2
fi

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  if [[ -x $build/bench/bench_cuda_layers ]]; then
    section "CUDA layers, bf16 NHWC (bench_cuda_layers)"
    "$build/bench/bench_cuda_layers" "${bench_args[@]}"
  else
    echo "run_bench.sh: a GPU is visible but $build/bench/bench_cuda_layers is not built (CUDA backend off?)." >&2
  fi
else
  section "CUDA layers: skipped, no GPU visible"
fi

section "scalebench CPU training throughput: mnist-cnn, batch 64, synthetic 1x28x28 (6400 images)"
mpirun "${mpirun_flags[@]}" -np 1 "$build/scalebench" train --model mnist-cnn \
  --data synthetic:1x28x28:10:6400:1000 --epochs 1 --batch-size 64 --device cpu

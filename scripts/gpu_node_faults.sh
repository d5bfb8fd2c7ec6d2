#!/usr/bin/env bash
# GPU-node fault checks on one GPU: a SIGTERM checkpoint resumed on the GPU gives the losses of an
# uninterrupted run within tolerance, and running out of GPU memory stops with the sizes and the batch.
# Usage: scripts/gpu_node_faults.sh [OUTPUT_DIR]   (default gpu-faults; summary.txt there, and OUTPUT_DIR.tgz)
set -u
R=${1:-gpu-faults}
# shellcheck source=scripts/gpu_node_env.sh
source "$(dirname "$0")/gpu_node_env.sh"
nvidia-smi -L | head -1 | tee "$R/summary.txt"
ARGS=(train --model mnist-cnn --data synthetic:1x28x28:10:64000:2000 --device cuda --precision fp32 --deterministic
      --batch-size 64 --optimizer adadelta --lr 1.0 --epochs 2)
$S "${ARGS[@]}" --out "$R/full.h5" > "$R/full.log" 2>&1
echo "full rc=$?" | tee -a "$R/summary.txt"
$S "${ARGS[@]}" --out "$R/part.h5" --log-interval 100 > "$R/part.log" 2>&1 &
pid=$!
for _ in $(seq 1 300); do grep -q "epoch 1 step 300/" "$R/part.log" && break; sleep 0.1; done
kill -TERM $pid; wait $pid
echo "interrupted rc=$? (75 expected) $(grep '^done' "$R/part.log")" | tee -a "$R/summary.txt"
$S "${ARGS[@]}" --out "$R/part.h5" --resume "$R/part.h5.ckpt.h5" > "$R/resumed.log" 2>&1
echo "resumed rc=$?" | tee -a "$R/summary.txt"
grep '^epoch' "$R/full.log" "$R/resumed.log" | tee -a "$R/summary.txt"
$S train --model wrn --data synthetic:3x32x32:100:200000:100 --device cuda --precision fp32 --batch-size 200000 --epochs 1 > "$R/oom.log" 2>&1
echo "oom rc=$? $(grep -m1 'out of GPU memory' "$R/oom.log")" | tee -a "$R/summary.txt"
tar czf "$R.tgz" -C "$(dirname "$R")" "$(basename "$R")"

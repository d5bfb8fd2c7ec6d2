#!/usr/bin/env bash
# One multi-GPU node session: weak and strong scaling studies of wrn and mnist-cnn on 1, 2, 4, ... GPUs
# (`scalebench scale`), PyTorch DDP at the same GPU counts, and the all-reduce sweep. Expects .stage/
# from scripts/stage_gpu_node.sh; writes under $OUT (packed into $OUT/phase_b.tgz).
set -u
R=$OUT/b2
# shellcheck source=scripts/gpu_node_multi_gpu_env.sh
source "$(dirname "$0")/gpu_node_multi_gpu_env.sh"

say "== time to 91% on Fashion-MNIST (one GPU)"
timeout 120 $S train --model mnist-cnn --data fashion-mnist:.stage-data/fashion-mnist --device cuda --precision tf32 --batch-size 64 --optimizer adadelta --lr 1.0 --scheduler step --gamma 0.7 --epochs 14 --target-accuracy 0.91 --out "$R/sb-tta.h5" > "$R/sb-tta.log" 2>&1
say "sb tta rc=$? $(grep -E '^time to|^done' "$R/sb-tta.log" | tr '\n' ' ')"

study mnist-weak --model mnist-cnn --data synthetic:1x28x28:10:60000:10000 --precision tf32 --batch-size 64 --scaling weak --optimizer adadelta --lr 1.0
study mnist-strong --model mnist-cnn --data synthetic:1x28x28:10:60000:10000 --precision tf32 --batch-size 256 --scaling strong --optimizer adadelta --lr 1.0
say "== PyTorch DDP mnist-cnn, same node"
for n in ${list//,/ }; do
  timeout 120 "${MPI[@]}" -np "$n" $P bench/pytorch_reference.py --model mnist-cnn --batch-size 64 --steps 200 --warmup 30 \
      --reference-out "$R/pt-mnist-weak.json" > "$R/pt-mnist-$n.log" 2>&1
  say "pt mnist $n gpus rc=$? $(tail -1 "$R/pt-mnist-$n.log")"
done
say "== all-reduce sweep"
timeout 200 "${MPI[@]}" -np "$N" $S comm --device cuda --dtypes fp32,bf16 --min-bytes 1K --max-bytes 256M --comm-model wrn --out "$R/comm.h5" > "$R/comm.log" 2>&1
say "comm rc=$?"; tail -25 "$R/comm.log" | tee -a "$R/summary.txt"
tar czf "$OUT/phase_b2.tgz" -C "$OUT" b2

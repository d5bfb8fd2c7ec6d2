#!/usr/bin/env bash
# One multi-GPU node session: weak and strong scaling studies of wrn and mnist-cnn on 1, 2, 4, ... GPUs
# (`scalebench scale`), PyTorch DDP at the same GPU counts, and the all-reduce sweep. Expects .stage/
# from scripts/stage_gpu_node.sh; writes under $OUT (packed into $OUT/phase_b.tgz).
set -u
R=$OUT/b1
# shellcheck source=scripts/gpu_node_multi_gpu_env.sh
source "$(dirname "$0")/gpu_node_multi_gpu_env.sh"

say "== one GPU: tests after the last kernel change, and mnist-cnn side by side"
export SCALEBENCH_REFERENCE_FIXTURE=$PWD/.stage/fixtures.h5
for t in .stage/tests/test_*; do timeout 120 "$t" > "$R/$(basename "$t").log" 2>&1; say "$(basename "$t") rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$R/$(basename "$t").log" | tr '\n' ' ')"; done
for p in tf32 fp32; do
  timeout 120 $S train --model mnist-cnn --data synthetic:1x28x28:10:64000:1000 --device cuda --precision $p --batch-size 64 --optimizer adadelta --lr 1.0 --epochs 3 --out "$R/sb-mnist-$p.h5" > "$R/sb-mnist-$p.log" 2>&1
  say "sb mnist $p rc=$? $(grep '^epoch' "$R/sb-mnist-$p.log" | tail -1)"
done
timeout 120 $P bench/pytorch_reference.py --model mnist-cnn --batch-size 64 --json "$R/pt-mnist-fp32.json" > "$R/pt-mnist-fp32.log" 2>&1
say "pt mnist fp32 rc=$? $(grep -o '"images_per_s": [0-9.]*' "$R/pt-mnist-fp32.json" | head -1)"
say "== wrn scaling studies"
study wrn-weak --model wrn --data synthetic:3x32x32:100:76800:1000 --precision bf16 --layout nhwc --batch-size 256 --scaling weak
study wrn-strong --model wrn --data synthetic:3x32x32:100:76800:1000 --precision bf16 --layout nhwc --batch-size 1024 --scaling strong
say "== PyTorch DDP wrn, same node"
for n in ${list//,/ }; do
  timeout 200 "${MPI[@]}" -np "$n" $P bench/pytorch_reference.py --model wrn --precision bf16 --channels-last --batch-size 256 --steps 50 --warmup 15 \
      --reference-out "$R/pt-wrn-weak.json" > "$R/pt-wrn-$n.log" 2>&1
  say "pt wrn $n gpus rc=$? $(tail -1 "$R/pt-wrn-$n.log")"
done
tar czf "$OUT/phase_b1.tgz" -C "$OUT" b1

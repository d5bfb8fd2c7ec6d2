#!/usr/bin/env bash
# GPU-node session, part 2 (one GPU): throughput side by side with PyTorch on the same card, and time
# to accuracy on Fashion-MNIST (.stage-data/). Expects .stage/ from scripts/stage_gpu_node.sh and
# writes everything under $OUT (packed into $OUT/phase_a2.tgz).
set -u
R=$OUT/a2
# shellcheck source=scripts/gpu_node_env.sh
source "$(dirname "$0")/gpu_node_env.sh"
cat "$R/gpu.txt"
ldd "$S" | grep "not found" && say "MISSING LIBRARIES"

run() {  # name, command...
  local name=$1; shift
  timeout 240 "$@" > "$R/$name.log" 2>&1
  say "$name rc=$? $(grep -E '^epoch|images_per_s|img/s|time to' "$R/$name.log" | tail -2 | tr '\n' ' ')"
}
say "== throughput, same card"
run sb-mnist-fp32 $S train --model mnist-cnn --data synthetic:1x28x28:10:64000:1000 --device cuda --precision fp32 --batch-size 64 --optimizer adadelta --lr 1.0 --epochs 3 --out "$R/sb-mnist-fp32.h5"
run pt-mnist-fp32 $P bench/pytorch_reference.py --model mnist-cnn --batch-size 64 --json "$R/pt-mnist-fp32.json"
run sb-wrn-bf16 $S train --model wrn --data synthetic:3x32x32:100:25600:1000 --device cuda --precision bf16 --layout nhwc --batch-size 256 --epochs 3 --out "$R/sb-wrn-bf16.h5"
run pt-wrn-bf16 $P bench/pytorch_reference.py --model wrn --precision bf16 --channels-last --steps 60 --warmup 15 --json "$R/pt-wrn-bf16.json"
run sb-wrn-tf32 $S train --model wrn --data synthetic:3x32x32:100:12800:1000 --device cuda --precision tf32 --layout nchw --batch-size 256 --epochs 2 --out "$R/sb-wrn-tf32.h5"
run pt-wrn-fp32 $P bench/pytorch_reference.py --model wrn --precision fp32 --steps 40 --warmup 10 --json "$R/pt-wrn-fp32.json"
say "== time to 91% on Fashion-MNIST"
run sb-tta $S train --model mnist-cnn --data fashion-mnist:.stage-data/fashion-mnist --device cuda --batch-size 64 --optimizer adadelta --lr 1.0 --scheduler step --gamma 0.7 --epochs 14 --target-accuracy 0.91 --out "$R/sb-tta.h5"
run pt-tta $P bench/pytorch_reference.py --time-to-accuracy .stage-data/fashion-mnist --json "$R/pt-tta.json"
tar czf "$OUT/phase_a2.tgz" -C "$OUT" a2
cat "$R/summary.txt"

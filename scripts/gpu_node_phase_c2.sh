#!/usr/bin/env bash
# Two GPUs, after the step changes of this session (graphs kept across evaluations that allocate
# nothing, a small last all-reduce bucket): the multi-GPU tests, the wrn weak-scaling study at 1 and 2
# GPUs twice (to see the run-to-run spread), PyTorch DDP at 1 and 2 GPUs, and mnist-cnn on one GPU
# against PyTorch eager fp32. SM clocks and power are sampled throughout. Writes under $OUT.
set -u
R=$OUT/c2
# shellcheck source=scripts/gpu_node_multi_gpu_env.sh
source "$(dirname "$0")/gpu_node_multi_gpu_env.sh"
sample_clocks &
sampler=$!

say "== multi-GPU tests (2 ranks, one GPU each)"
mpi_gpu_tests test_cuda_graph_across_evaluation test_multi_gpu_data_parallel test_gpu_model_steps
wrn_variant wrn-weak-1 1,2 ""
wrn_variant wrn-weak-2 1,2 ""
say "== PyTorch DDP wrn"
ddp_wrn_weak 1 2
say "== mnist-cnn, one GPU, batch 64"
timeout 120 "$S" train --model mnist-cnn --data synthetic:1x28x28:10:64000:1000 --device cuda --precision fp32 --batch-size 64 --optimizer adadelta --lr 1.0 --epochs 3 --out "$R/sb-mnist-fp32.h5" > "$R/sb-mnist-fp32.log" 2>&1
say "sb mnist fp32 rc=$? $(grep '^epoch' "$R/sb-mnist-fp32.log" | tail -1)"
timeout 120 "$P" bench/pytorch_reference.py --model mnist-cnn --batch-size 64 --json "$R/pt-mnist-fp32.json" > "$R/pt-mnist-fp32.log" 2>&1
say "pt mnist fp32 rc=$? $(grep -o '"images_per_s": [0-9.]*' "$R/pt-mnist-fp32.json" | head -1)"
kill $sampler
tar czf "$OUT/phase_c2.tgz" -C "$OUT" c2

#!/usr/bin/env bash
# Two GPUs: the whole-model step tests (BN models included), then where the wrn weak-scaling loss at
# 2 GPUs comes from. A baseline study at 1 and 2 GPUs, then 2-GPU variants that change only how NCCL
# competes with backward for SMs and memory bandwidth (CTA limits, CTA policy, bf16 all-reduce), and
# PyTorch DDP at 1 and 2 GPUs. SM clocks and power are sampled throughout. Writes under $OUT.
set -u
R=$OUT/c1
# shellcheck source=scripts/gpu_node_multi_gpu_env.sh
source "$(dirname "$0")/gpu_node_multi_gpu_env.sh"
sample_clocks &
sampler=$!
say "torch nccl $($P -c 'import torch; print(torch.cuda.nccl.version())' 2>&1)"

say "== whole-model steps, GPU against CPU (2 ranks, one GPU each)"
mpi_gpu_tests test_gpu_model_steps

wrn_variant base 1,2 ""
wrn_variant ctas4 2 "NCCL_MIN_CTAS=1,NCCL_MAX_CTAS=4"
wrn_variant bf16 2 "" --allreduce-bf16
wrn_variant policy 2 "NCCL_CTA_POLICY=1"
wrn_variant ctas8 2 "NCCL_MIN_CTAS=1,NCCL_MAX_CTAS=8"

say "== PyTorch DDP wrn"
ddp_wrn_weak 1 2
kill $sampler
tar czf "$OUT/phase_c1.tgz" -C "$OUT" c1

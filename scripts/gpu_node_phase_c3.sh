#!/usr/bin/env bash
# Two GPUs: does overlapping the all-reduce with backward pay? On the H200 pair the 2-GPU step's backward
# is 0.3 ms slower than alone while NCCL runs beside it; the whole 68.7 MB all-reduce alone should take
# about 0.2 ms. Baseline study at 1 and 2 GPUs, then 2-GPU variants: one bucket after backward (no
# overlap), the same in bf16, 50 MiB buckets, and NCCL held to 32 CTAs (shorter, wider all-reduces).
set -u
R=$OUT/c3
# shellcheck source=scripts/gpu_node_multi_gpu_env.sh
source "$(dirname "$0")/gpu_node_multi_gpu_env.sh"
wrn_variant base 1,2 ""
wrn_variant one-bucket 2 "" --bucket-mib 1024
wrn_variant one-bucket-bf16 2 "" --bucket-mib 1024 --allreduce-bf16
wrn_variant bucket50 2 "" --bucket-mib 50
wrn_variant ctas32 2 "NCCL_MIN_CTAS=32,NCCL_MAX_CTAS=32"
wrn_variant bucket10 2 "" --bucket-mib 10
tar czf "$OUT/phase_c3.tgz" -C "$OUT" c3

#!/usr/bin/env bash
# Two GPUs, the final build of this session (graphs kept across evaluations, a small last bucket, the
# all-reduce on a high-priority stream): the multi-GPU tests, then the wrn weak-scaling study at 1 and 2
# GPUs with the default 25 MiB buckets, twice, and the 2-GPU point with 50 MiB buckets. Writes under $OUT.
set -u
R=$OUT/c5
# shellcheck source=scripts/gpu_node_multi_gpu_env.sh
source "$(dirname "$0")/gpu_node_multi_gpu_env.sh"
say "== multi-GPU tests (2 ranks, one GPU each)"
mpi_gpu_tests test_cuda_graph_across_evaluation test_multi_gpu_data_parallel test_gpu_model_steps
wrn_variant wrn-weak-1 1,2 ""
wrn_variant wrn-weak-2 1,2 ""
wrn_variant wrn-weak-b50 2 "" --bucket-mib 50
tar czf "$OUT/phase_c5.tgz" -C "$OUT" c5

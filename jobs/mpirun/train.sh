#!/usr/bin/env bash
# scalebench on a workstation with mpirun: one rank per GPU (1..N GPUs), or CPU ranks.
#
#   jobs/mpirun/train.sh                                     (every visible GPU)
#   SCALEBENCH_NP=2 jobs/mpirun/train.sh                     (the first 2 GPUs)
#   SCALEBENCH_DEVICE=cpu SCALEBENCH_NP=2 SCALEBENCH_MODEL=mnist-cnn SCALEBENCH_DATA=fashion-mnist \
#     SCALEBENCH_EXTRA_ARGS="--train-limit 2000" jobs/mpirun/train.sh     (CPU mode, what the tests run)
#
# Writes results/<job name>-<job id>.h5 relative to the current folder; the job id is the start time
# and the process id (YYYYmmdd-HHMMSS-PID).
#
# Environment variables:
#   SCALEBENCH_NP           ranks                                   [the visible GPUs (CUDA_VISIBLE_DEVICES, else nvidia-smi -L); 2 with cpu]
#   SCALEBENCH_JOB_NAME     the name in the results file's name     [sb-train]
#   SCALEBENCH_BIN          the binary                              [build/scalebench of this checkout]
#   SCALEBENCH_MODULES      modules to load; empty: none            []
#   SCALEBENCH_MODEL        --model: mnist-cnn, wrn, cifar-cnn, mlp, resnet18, resnet34, resnet50, resnet18-cifar [wrn]
#   SCALEBENCH_DATA         --data, e.g. cifar100:/data/cifar-100-binary [synthetic:3x32x32:100]
#   SCALEBENCH_EPOCHS       --epochs                                [3]
#   SCALEBENCH_BATCH_SIZE   --batch-size per rank                   [256]
#   SCALEBENCH_DEVICE       --device: cuda or cpu                   [cuda]
#   SCALEBENCH_PRECISION    --precision: fp32, tf32, fp16, bf16     [bf16 on cuda, the program's default on cpu]
#   SCALEBENCH_EXTRA_ARGS   more scalebench options, split at spaces []
#   SCALEBENCH_RESULTS      folder of the HDF5 files                [results]
#   SCALEBENCH_MPIRUN_FLAGS more mpirun options                     [--bind-to none; plus --oversubscribe on cpu]
# GPU environment, passed through when set: CUDA_VISIBLE_DEVICES (which GPUs), NCCL_DEBUG=INFO,
#   NCCL_NVLS_ENABLE=0 (no NVLink multicast), NCCL_P2P_DISABLE=1 (to measure without peer-to-peer).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export SCALEBENCH_HOME=${SCALEBENCH_HOME:-$(dirname "$(dirname "$here")")}
# shellcheck source=../lib/scalebench-job.sh
source "$here/../lib/scalebench-job.sh"

sb_mpirun_job_init "${SCALEBENCH_JOB_NAME:-sb-train}"
sb_show_env
sb_launch "$SCALEBENCH_NP" train "${SB_ARGS[@]}"

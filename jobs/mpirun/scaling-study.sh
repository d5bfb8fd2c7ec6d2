#!/usr/bin/env bash
# The scaling study on a workstation: `scalebench scale` over 1, 2, 4, ... GPUs in one mpirun.
#
#   jobs/mpirun/scaling-study.sh                             (every visible GPU: 1,2,4,...)
#   SCALEBENCH_GPUS=1,2,4 jobs/mpirun/scaling-study.sh
#   SCALEBENCH_DEVICE=cpu SCALEBENCH_NP=2 SCALEBENCH_MODEL=mnist-cnn \
#     SCALEBENCH_DATA=synthetic:1x28x28:10:2000:500 jobs/mpirun/scaling-study.sh       (CPU mode)
#   then: python3 analysis/report.py results/sb-scaling-*.h5 --out report/
#
# Writes results/<job name>-<job id>.h5 relative to the current folder; the job id is the start time
# and the process id (YYYYmmdd-HHMMSS-PID).
#
# Environment variables:
#   SCALEBENCH_NP           ranks (the largest GPU count)           [the visible GPUs (CUDA_VISIBLE_DEVICES, else nvidia-smi -L); 2 with cpu]
#   SCALEBENCH_GPUS         --gpus: the counts of the study         [1,2,4,... up to SCALEBENCH_NP]
#   SCALEBENCH_SCALING      --scaling: weak or strong               [weak]
#   SCALEBENCH_SETTLE_EPOCHS --settle-epochs: epochs per count run before the measured ones, left out of the figures [1]
#   SCALEBENCH_JOB_NAME     the name in the results file's name     [sb-scaling]
#   SCALEBENCH_BIN          the binary                              [build/scalebench of this checkout]
#   SCALEBENCH_MODULES      modules to load; empty: none            []
#   SCALEBENCH_MODEL        --model: mnist-cnn, wrn, cifar-cnn, mlp, resnet18, resnet34, resnet50, resnet18-cifar [wrn]
#   SCALEBENCH_DATA         --data                                  [synthetic:3x32x32:100]
#   SCALEBENCH_EPOCHS       --epochs per GPU count                  [3]
#   SCALEBENCH_BATCH_SIZE   --batch-size (per GPU if weak, global if strong) [256]
#   SCALEBENCH_DEVICE       --device: cuda or cpu                   [cuda]
#   SCALEBENCH_PRECISION    --precision: fp32, tf32, fp16, bf16     [bf16 on cuda, the program's default on cpu]
#   SCALEBENCH_EXTRA_ARGS   more scalebench options, split at spaces []
#   SCALEBENCH_RESULTS      folder of the HDF5 files                [results]
#   SCALEBENCH_MPIRUN_FLAGS more mpirun options                     [--bind-to none; plus --oversubscribe on cpu]
# GPU environment, passed through when set: CUDA_VISIBLE_DEVICES, NCCL_DEBUG=INFO, NCCL_NVLS_ENABLE=0.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export SCALEBENCH_HOME=${SCALEBENCH_HOME:-$(dirname "$(dirname "$here")")}
# shellcheck source=../lib/scalebench-job.sh
source "$here/../lib/scalebench-job.sh"

[[ -z ${SCALEBENCH_WARMUP_EPOCHS:-} ]] ||
  { echo "SCALEBENCH_WARMUP_EPOCHS is now SCALEBENCH_SETTLE_EPOCHS (scale --settle-epochs); set that instead" >&2; exit 2; }
sb_mpirun_job_init "${SCALEBENCH_JOB_NAME:-sb-scaling}"
SB_ARGS+=(--gpus "${SCALEBENCH_GPUS:-$(sb_powers_of_two "$SCALEBENCH_NP")}" --scaling "${SCALEBENCH_SCALING:-weak}"
          --settle-epochs "${SCALEBENCH_SETTLE_EPOCHS:-1}")
sb_show_env
sb_launch "$SCALEBENCH_NP" scale "${SB_ARGS[@]}"

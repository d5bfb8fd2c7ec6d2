#!/usr/bin/env bash
# Nsight Systems around scalebench, one report per profiled rank: put it between the launcher and the
# binary. scalebench's NVTX ranges (epoch, step, its phases, evaluation, each gradient bucket's
# all-reduce) then line up with the CUDA kernels, NCCL's own ranges and the MPI calls.
#
#   srun jobs/nsys/nsys-rank.sh build/scalebench train --device cuda --epochs 2 ...
#   mpirun -np 4 jobs/nsys/nsys-rank.sh build/scalebench train --device cuda --epochs 2 ...
#
# Each profiled rank writes $SCALEBENCH_NSYS_DIR/scalebench-rank<R>.nsys-rep (open it in nsys-ui, or
# `nsys stats` it); the other ranks run scalebench as they are.
#
# Environment variables:
#   SCALEBENCH_NSYS_RANKS     ranks to profile, comma-separated, or "all"   [0]
#   SCALEBENCH_NSYS_DIR       folder of the reports                         [nsys]
#   SCALEBENCH_NSYS_MPI_IMPL  --mpi-impl of nsys: openmpi or mpich          [openmpi]
#   SCALEBENCH_NSYS_ARGS      more nsys profile options, split at spaces    []
#   SCALEBENCH_NSYS           the nsys binary                               [nsys]
set -euo pipefail

rank=${SLURM_PROCID:-${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-${PMIX_RANK:-0}}}}
ranks=${SCALEBENCH_NSYS_RANKS:-0}
if [[ $ranks != all && ",$ranks," != *",$rank,"* ]]; then
  exec "$@"
fi

dir=${SCALEBENCH_NSYS_DIR:-nsys}
mkdir -p "$dir"
read -r -a extra <<< "${SCALEBENCH_NSYS_ARGS:-}"
# --cuda-graph-trace=node: the kernels of a replayed CUDA graph (the training step) one by one, not one
# launch. --trace=mpi needs the MPI implementation named.
exec "${SCALEBENCH_NSYS:-nsys}" profile --trace=cuda,nvtx,mpi --cuda-graph-trace=node \
  --mpi-impl="${SCALEBENCH_NSYS_MPI_IMPL:-openmpi}" --output="$dir/scalebench-rank$rank" --force-overwrite=false \
  "${extra[@]}" "$@"

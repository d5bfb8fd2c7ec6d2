#!/usr/bin/env bash
# Runs scalebench inside the Apptainer image built from scalebench.def. The job scripts take one
# binary path, so point them at this file to run the container:
#   SCALEBENCH_BIN=$PWD/jobs/container/scalebench-in-container.sh SCALEBENCH_IMAGE=$PWD/scalebench.sif \
#     sbatch jobs/slurm/one-node.sbatch
# Each rank starts its own container (srun --mpi=pmix or mpirun outside, scalebench inside); the
# host's PMIx (srun) or Open MPI (mpirun) must match the container's closely enough to bootstrap.
#
# Environment variables:
#   SCALEBENCH_IMAGE            the .sif image                      [scalebench.sif]
#   SCALEBENCH_APPTAINER_FLAGS  apptainer exec options, split at spaces; --nv binds the GPU driver
#                               and libraries, --bind /data makes a data set visible [--nv]
#   SCALEBENCH_APPTAINER        the apptainer (or singularity) command [apptainer]
set -euo pipefail
image=${SCALEBENCH_IMAGE:-scalebench.sif}
[[ -r $image ]] || { echo "scalebench-in-container: no image '$image' (SCALEBENCH_IMAGE)" >&2; exit 2; }
read -r -a flags <<< "${SCALEBENCH_APPTAINER_FLAGS:---nv}"
exec "${SCALEBENCH_APPTAINER:-apptainer}" exec "${flags[@]}" "$image" /opt/scalebench/bin/scalebench "$@"

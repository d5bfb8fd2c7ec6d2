#!/usr/bin/env bash
# The executable of scalebench.sub: runs scalebench train on one HTCondor execute machine with one
# mpirun rank per assigned GPU (or per CPU rank with SCALEBENCH_DEVICE=cpu).
#
#   scalebench-wrapper.sh NRANKS NAME ID        writes results/NAME-ID.h5 in the job's scratch folder
#
# Self-contained: with file transfer only this script reaches the execute machine.
# Environment variables (set by the submit file's `environment` line):
#   SCALEBENCH_BIN          the binary (shared file system or container)  [scalebench on PATH]
#   SCALEBENCH_MODULES      modules to load, e.g. "gcc openmpi cuda cudnn nccl hdf5"; empty: none []
#   SCALEBENCH_MODEL        --model                                 [wrn]
#   SCALEBENCH_DATA         --data                                  [synthetic:3x32x32:100]
#   SCALEBENCH_EPOCHS       --epochs                                [3]
#   SCALEBENCH_BATCH_SIZE   --batch-size per rank                   [256]
#   SCALEBENCH_DEVICE       --device: cuda or cpu                   [cuda]
#   SCALEBENCH_PRECISION    --precision; empty: the program's default [bf16 on cuda]
#   SCALEBENCH_EXTRA_ARGS   more scalebench options, split at spaces []
#   SCALEBENCH_MPIRUN_FLAGS more mpirun options                     [--bind-to none]
#   NCCL_DEBUG, NCCL_NVLS_ENABLE, NCCL_P2P_DISABLE, UCX_TLS: passed to the ranks when set
set -euo pipefail

if [[ $# -ne 3 || ! $1 =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: $0 NRANKS NAME ID" >&2
  exit 2
fi
nranks=$1 name=${2//[^A-Za-z0-9._-]/_} id=$3
bin=${SCALEBENCH_BIN:-scalebench}
device=${SCALEBENCH_DEVICE:-cuda}
precision=${SCALEBENCH_PRECISION-bf16}
[[ $device == cuda ]] || precision=${SCALEBENCH_PRECISION:-}

if [[ -n ${SCALEBENCH_MODULES:-} ]]; then
  # Batch shells often lack `module`; the init scripts read unset variables, hence set +u.
  set +u
  for init in /etc/profile.d/lmod.sh /etc/profile.d/modules.sh; do
    # shellcheck disable=SC1090
    [[ -r $init ]] && ! type module >/dev/null 2>&1 && source "$init"
  done
  read -r -a mods <<< "$SCALEBENCH_MODULES"
  module load "${mods[@]}"
  set -u
fi
command -v "$bin" >/dev/null 2>&1 || { echo "scalebench wrapper: no scalebench binary '$bin' (SCALEBENCH_BIN)" >&2; exit 2; }

# HTCondor sets OMP_NUM_THREADS to request_cpus for the whole job; share it among the ranks.
threads=$(( ${OMP_NUM_THREADS:-$(nproc)} / nranks ))
export OMP_NUM_THREADS=$(( threads > 0 ? threads : 1 ))
export OPENBLAS_NUM_THREADS=$OMP_NUM_THREADS
export NCCL_DEBUG=${NCCL_DEBUG:-WARN}

mkdir -p results
out=results/$name-$id.h5
args=(train --model "${SCALEBENCH_MODEL:-wrn}" --data "${SCALEBENCH_DATA:-synthetic:3x32x32:100}"
      --epochs "${SCALEBENCH_EPOCHS:-3}" --batch-size "${SCALEBENCH_BATCH_SIZE:-256}" --device "$device")
[[ -n $precision ]] && args+=(--precision "$precision")
read -r -a extra <<< "${SCALEBENCH_EXTRA_ARGS:-}"
args+=("${extra[@]}" --out "$out")

read -r -a flags <<< "${SCALEBENCH_MPIRUN_FLAGS:---bind-to none}"
[[ $(id -u) -eq 0 ]] && flags+=(--allow-run-as-root)
[[ $device == cpu ]] && flags+=(--oversubscribe)
for var in $(compgen -e | grep -E '^(NCCL|UCX)_' || true); do flags+=(-x "$var"); done

echo "scalebench wrapper: $(hostname -s), GPUs ${CUDA_VISIBLE_DEVICES:-none}, $(date -Is)"
echo "scalebench wrapper: mpirun -np $nranks ${flags[*]} $bin ${args[*]}"
rc=0
mpirun -np "$nranks" "${flags[@]}" "$bin" "${args[@]}" || rc=$?
echo "scalebench wrapper: exit code $rc; results in $out"
exit "$rc"

# Shared by the batch scripts in jobs/slurm and jobs/mpirun (sourced, never run). It reads the
# SCALEBENCH_* variables, loads modules, builds the scalebench command line and launches it.
#
# Variables (all optional; the scripts document the same list at their top):
#   SCALEBENCH_HOME         the scalebench checkout                 [the folder the job was submitted from]
#   SCALEBENCH_BIN          the scalebench binary                   [$SCALEBENCH_HOME/build/scalebench]
#   SCALEBENCH_MODULES      modules to load, e.g. "gcc openmpi cuda cudnn nccl hdf5"; empty: no module command []
#   SCALEBENCH_LAUNCH       srun (srun --mpi=pmix) or mpirun        [srun inside Slurm, else mpirun]
#   SCALEBENCH_MODEL        --model                                 [wrn]
#   SCALEBENCH_DATA         --data                                  [synthetic:3x32x32:100]
#   SCALEBENCH_EPOCHS       --epochs                                [3]
#   SCALEBENCH_BATCH_SIZE   --batch-size (per rank: weak scaling)   [256]
#   SCALEBENCH_DEVICE       --device: cuda or cpu                   [cuda]
#   SCALEBENCH_PRECISION    --precision; empty: the program's default [bf16 with cuda, empty with cpu]
#   SCALEBENCH_EXTRA_ARGS   more options, split at spaces, e.g. "--train-limit 2000 --no-augment" []
#   SCALEBENCH_RESULTS      folder of the HDF5 files                [results]
#   SCALEBENCH_SRUN_FLAGS   more srun options, split at spaces      []
#   SCALEBENCH_MPIRUN_FLAGS more mpirun options, split at spaces    [--bind-to none]
# shellcheck shell=bash

sb_die() {
  echo "scalebench job: error: $*" >&2
  exit 2
}

# Loads $SCALEBENCH_MODULES. Batch shells often lack the `module` function, so the usual init
# scripts are tried; set -u is lifted because Lmod's and Environment Modules' scripts read unset
# variables.
sb_load_modules() {
  [[ -z ${SCALEBENCH_MODULES:-} ]] && return 0
  local init mods
  if ! type module >/dev/null 2>&1; then
    for init in /etc/profile.d/lmod.sh /etc/profile.d/modules.sh /usr/share/lmod/lmod/init/bash \
                /usr/share/modules/init/bash; do
      # shellcheck disable=SC1090
      [[ -r $init ]] && { set +u; source "$init"; set -u; break; }
    done
  fi
  type module >/dev/null 2>&1 || sb_die "SCALEBENCH_MODULES is set but this shell has no 'module' command"
  read -r -a mods <<< "$SCALEBENCH_MODULES"
  set +u
  module load "${mods[@]}" || sb_die "module load ${mods[*]} failed"
  set -u
}

# Sets the defaults, loads modules and checks the binary. $1: job name, $2: job id; the results file
# is $SCALEBENCH_RESULTS/<name>-<id>.h5 (SB_OUT).
sb_job_init() {
  local name=${1//[^A-Za-z0-9._-]/_} id=$2
  : "${SCALEBENCH_HOME:=${SLURM_SUBMIT_DIR:-$PWD}}"
  : "${SCALEBENCH_BIN:=$SCALEBENCH_HOME/build/scalebench}"
  : "${SCALEBENCH_MODEL:=wrn}"
  : "${SCALEBENCH_DATA:=synthetic:3x32x32:100}"
  : "${SCALEBENCH_EPOCHS:=3}"
  : "${SCALEBENCH_BATCH_SIZE:=256}"
  : "${SCALEBENCH_DEVICE:=cuda}"
  if [[ -z ${SCALEBENCH_PRECISION+set} ]]; then
    SCALEBENCH_PRECISION=""
    [[ $SCALEBENCH_DEVICE == cuda ]] && SCALEBENCH_PRECISION=bf16
  fi
  : "${SCALEBENCH_RESULTS:=results}"
  : "${SCALEBENCH_MPIRUN_FLAGS:=--bind-to none}"
  if [[ -z ${SCALEBENCH_LAUNCH:-} ]]; then
    SCALEBENCH_LAUNCH=mpirun
    [[ -n ${SLURM_JOB_ID:-} ]] && SCALEBENCH_LAUNCH=srun
  fi
  [[ $SCALEBENCH_LAUNCH == srun || $SCALEBENCH_LAUNCH == mpirun ]] ||
    sb_die "SCALEBENCH_LAUNCH must be srun or mpirun, not '$SCALEBENCH_LAUNCH'"

  # NCCL_DEBUG=WARN prints why NCCL failed, and nothing otherwise; INFO shows the transports chosen.
  export NCCL_DEBUG=${NCCL_DEBUG:-WARN}
  # One BLAS/OpenMP thread per CPU the task owns (the CPU backend); more would oversubscribe.
  export OMP_NUM_THREADS=${OMP_NUM_THREADS:-${SLURM_CPUS_PER_TASK:-1}}
  export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-$OMP_NUM_THREADS}

  sb_load_modules
  [[ -x $SCALEBENCH_BIN ]] ||
    sb_die "no scalebench binary at '$SCALEBENCH_BIN'; build it (see README.md) or set SCALEBENCH_BIN"
  mkdir -p "$SCALEBENCH_RESULTS" || sb_die "cannot create the results folder '$SCALEBENCH_RESULTS'"
  SB_OUT=$SCALEBENCH_RESULTS/$name-$id.h5
}

# The options shared by train and scale, in SB_ARGS.
sb_common_args() {
  local extra
  SB_ARGS=(--model "$SCALEBENCH_MODEL" --data "$SCALEBENCH_DATA" --epochs "$SCALEBENCH_EPOCHS"
           --batch-size "$SCALEBENCH_BATCH_SIZE" --device "$SCALEBENCH_DEVICE")
  [[ -n $SCALEBENCH_PRECISION ]] && SB_ARGS+=(--precision "$SCALEBENCH_PRECISION")
  read -r -a extra <<< "${SCALEBENCH_EXTRA_ARGS:-}"
  SB_ARGS+=("${extra[@]}" --out "$SB_OUT")
}

# Prints the environment that decides how NCCL and UCX reach the other GPUs and nodes.
sb_show_env() {
  echo "scalebench job: $(hostname -s), $(date -Is), launch=$SCALEBENCH_LAUNCH, device=$SCALEBENCH_DEVICE"
  echo "scalebench job: Slurm job ${SLURM_JOB_ID:-none}, nodes ${SLURM_JOB_NODELIST:-$(hostname -s)}," \
       "tasks ${SLURM_NTASKS:-?}, tasks per node ${SLURM_NTASKS_PER_NODE:-?}, GPUs per node ${SLURM_GPUS_ON_NODE:-none}"
  env | grep -E '^(NCCL|UCX|OMPI_MCA|PMIX_MCA|CUDA_VISIBLE_DEVICES)' | sort | sed 's/^/scalebench job:   /' || true
}

# Runs the scalebench subcommand $2.. on $1 ranks with the chosen launcher.
sb_launch() {
  local ntasks=$1 flags
  shift
  local cmd=("$SCALEBENCH_BIN" "$@")
  if [[ $SCALEBENCH_LAUNCH == srun ]]; then
    read -r -a flags <<< "${SCALEBENCH_SRUN_FLAGS:-}"
    # Since Slurm 22.05 srun no longer inherits --cpus-per-task from sbatch; pass it on.
    [[ -n ${SLURM_CPUS_PER_TASK:-} ]] && flags=(--cpus-per-task="$SLURM_CPUS_PER_TASK" "${flags[@]}")
    # pmix: Open MPI's ranks find each other through it (pmi2 and none do not work with Debian's).
    cmd=(srun --mpi=pmix --ntasks="$ntasks" --kill-on-bad-exit=1 "${flags[@]}" "${cmd[@]}")
  else
    read -r -a flags <<< "$SCALEBENCH_MPIRUN_FLAGS"
    [[ $(id -u) -eq 0 ]] && flags+=(--allow-run-as-root)  # containers and CI run as root
    local var
    # Forward the NCCL/UCX settings to ranks on other nodes (ssh-started daemons do not inherit them).
    for var in $(compgen -e | grep -E '^(NCCL|UCX)_' || true); do flags+=(-x "$var"); done
    cmd=(mpirun -np "$ntasks" "${flags[@]}" "${cmd[@]}")
  fi
  echo "scalebench job: ${cmd[*]}"
  local rc=0
  "${cmd[@]}" || rc=$?
  if [[ $rc -eq 0 ]]; then
    echo "scalebench job: results in $SB_OUT"
  else
    echo "scalebench job: scalebench failed with exit code $rc; finished epochs (if any) are in $SB_OUT" >&2
  fi
  return "$rc"
}

# The start shared by the jobs/mpirun scripts: sb_job_init with a job id from the clock and the PID, one
# rank per visible GPU unless SCALEBENCH_NP says otherwise (2 ranks on the CPU), and SB_ARGS.
sb_mpirun_job_init() {
  SCALEBENCH_LAUNCH=mpirun
  sb_job_init "$1" "$(date +%Y%m%d-%H%M%S)-$$"
  if [[ -z ${SCALEBENCH_NP:-} ]]; then
    SCALEBENCH_NP=2
    if [[ $SCALEBENCH_DEVICE == cuda ]]; then
      SCALEBENCH_NP=$(sb_visible_gpus)
      ((SCALEBENCH_NP > 0)) ||
        sb_die "no GPU visible (nvidia-smi -L, CUDA_VISIBLE_DEVICES); set SCALEBENCH_DEVICE=cpu to run on the CPU"
    fi
  fi
  # More CPU ranks than cores is fine for a functional run; Open MPI refuses it without this.
  if [[ $SCALEBENCH_DEVICE == cpu ]]; then SCALEBENCH_MPIRUN_FLAGS+=" --oversubscribe"; fi
  sb_common_args
}

# The GPUs this process may use: as many as CUDA_VISIBLE_DEVICES names when it is set (none when it
# is empty), else as many as nvidia-smi lists (0 without nvidia-smi).
sb_visible_gpus() {
  if [[ -n ${CUDA_VISIBLE_DEVICES+set} ]]; then
    local ids
    IFS=, read -r -a ids <<< "$CUDA_VISIBLE_DEVICES"
    echo "${#ids[@]}"
  else
    nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true
  fi
}

# Powers of two up to $1, comma-separated: the GPU counts of a study that fits $1 ranks.
sb_powers_of_two() {
  local n=1 list=""
  while ((n <= $1)); do
    list+=${list:+,}$n
    n=$((n * 2))
  done
  echo "$list"
}

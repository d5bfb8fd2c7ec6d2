#!/usr/bin/env bash
# The rank count the jobs/mpirun scripts choose on a GPU machine: one rank per GPU that CUDA_VISIBLE_DEVICES
# names, else per GPU that nvidia-smi lists, and a clear stop when there is none. nvidia-smi, mpirun and
# the scalebench binary are stand-ins that record how they were called, so no GPU is needed.
#
#   tests/slurm/test_gpu_count.sh SOURCE_DIR
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=common.sh
source "$here/common.sh"
[[ $# -eq 1 ]] || { echo "usage: $0 SOURCE_DIR" >&2; exit 2; }
src=$(realpath "$1")

work=$(mktemp -d /tmp/scalebench-gpu-count-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"
while read -r var; do unset "$var"; done < <(compgen -e | grep -E '^(SLURM_|SCALEBENCH_)' || true)
unset CUDA_VISIBLE_DEVICES

# Stand-ins: nvidia-smi lists $FAKE_GPUS GPUs; mpirun and scalebench write their arguments to calls.log.
mkdir bin
cat > bin/nvidia-smi <<'EOF'
#!/usr/bin/env bash
for ((i = 0; i < FAKE_GPUS; i++)); do echo "GPU $i: NVIDIA Stand-in (UUID: GPU-$i)"; done
EOF
cat > bin/mpirun <<'EOF'
#!/usr/bin/env bash
echo "mpirun $*" >> "$CALLS"
EOF
cp bin/mpirun bin/scalebench
chmod +x bin/*
# A PATH without any nvidia-smi: only what sb_visible_gpus itself runs.
mkdir nosmi
ln -s "$(command -v bash)" nosmi/bash
ln -s "$(command -v grep)" nosmi/grep
export PATH=$work/bin:$PATH CALLS=$work/calls.log SCALEBENCH_BIN=$work/bin/scalebench

failures=()
expect() {  # description, expected, actual
  if [[ $2 == "$3" ]]; then echo "ok: $1"; else failures+=("$1: expected '$2', got '$3'"); fi
}
visible() {  # sb_visible_gpus in a fresh shell with the given environment assignments
  env "$@" bash -c "source '$src/jobs/lib/scalebench-job.sh'; sb_visible_gpus"
}
study_call() {  # the mpirun line of jobs/mpirun/scaling-study.sh with the given environment assignments
  rm -f "$CALLS"
  env "$@" "$src/jobs/mpirun/scaling-study.sh" > run.log 2>&1 || { cat run.log; return 1; }
  grep -o -- '-np [0-9]*' "$CALLS"
  grep -o -- '--gpus [0-9,]*' "$CALLS"
}

expect "nvidia-smi lists 4" 4 "$(visible FAKE_GPUS=4)"
expect "CUDA_VISIBLE_DEVICES=0,1 of 4" 2 "$(visible FAKE_GPUS=4 CUDA_VISIBLE_DEVICES=0,1)"
expect "CUDA_VISIBLE_DEVICES empty" 0 "$(visible FAKE_GPUS=4 CUDA_VISIBLE_DEVICES=)"
expect "no nvidia-smi" 0 "$(visible FAKE_GPUS=4 PATH="$work/nosmi")"

expect "study on every GPU nvidia-smi lists" "-np 4 --gpus 1,2,4" "$(study_call FAKE_GPUS=4 | tr '\n' ' ' | sed 's/ $//')"
expect "study on the GPUs CUDA_VISIBLE_DEVICES names" "-np 2 --gpus 1,2" \
       "$(study_call FAKE_GPUS=8 CUDA_VISIBLE_DEVICES=3,5 | tr '\n' ' ' | sed 's/ $//')"
expect "SCALEBENCH_NP wins" "-np 3 --gpus 1,2" "$(study_call FAKE_GPUS=8 SCALEBENCH_NP=3 | tr '\n' ' ' | sed 's/ $//')"

rc=0
rm -f "$CALLS"
FAKE_GPUS=0 "$src/jobs/mpirun/train.sh" > none.log 2>&1 || rc=$?
expect "train.sh without a GPU exits 2" 2 "$rc"
expect "train.sh without a GPU says so" 1 "$(grep -c 'no GPU visible' none.log || true)"
expect "train.sh without a GPU starts nothing" 0 "$( [[ -e $CALLS ]] && grep -c . "$CALLS" || echo 0)"

[[ ${#failures[@]} -eq 0 ]] || fail "$(printf '%s; ' "${failures[@]}")"
echo PASS

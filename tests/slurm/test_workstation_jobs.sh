#!/usr/bin/env bash
# Runs the job scripts that need no batch system in their CPU configuration: jobs/mpirun/train.sh
# (and scaling-study.sh once scalebench has `scale`) and the HTCondor wrapper
# jobs/htcondor/scalebench-wrapper.sh, with 2 ranks each, and checks the HDF5 file each one writes.
#
#   tests/slurm/test_workstation_jobs.sh BUILD/scalebench SOURCE_DIR
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=common.sh
source "$here/common.sh"
[[ $# -eq 2 ]] || { echo "usage: $0 SCALEBENCH_BINARY SOURCE_DIR" >&2; exit 2; }
bin=$(realpath "$1")
src=$(realpath "$2")
[[ -x $bin ]] || fail "no scalebench binary at $1"
have_commands mpirun || fail "no mpirun (apt-get install openmpi-bin)"
python=$(find_python)

work=$(mktemp -d /tmp/scalebench-workstation-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"
# Outside any batch system, even when ctest itself runs inside a Slurm job.
while read -r var; do unset "$var"; done < <(compgen -e | grep -E '^SLURM_' || true)

export SCALEBENCH_BIN=$bin SCALEBENCH_DEVICE=cpu SCALEBENCH_MODEL=mnist-cnn
export SCALEBENCH_DATA=synthetic:1x28x28:10:512:256 SCALEBENCH_EPOCHS=1 SCALEBENCH_BATCH_SIZE=64

runs=("jobs/mpirun/train.sh" "jobs/htcondor/scalebench-wrapper.sh 2 sb-2gpu 7.0")
if "$bin" scale --help >/dev/null 2>&1; then
  runs+=("jobs/mpirun/scaling-study.sh")
else
  echo "NOTE: this scalebench has no 'scale' command yet; jobs/mpirun/scaling-study.sh is only shellchecked"
fi

failed=()
for run in "${runs[@]}"; do
  read -r -a cmd <<< "$run"
  rm -rf results
  echo "== SCALEBENCH_NP=2 ${cmd[*]}"
  rc=0
  SCALEBENCH_NP=2 timeout 300 "$src/${cmd[0]}" "${cmd[@]:1}" > run.log 2>&1 || rc=$?
  tail -n 3 run.log
  files=(results/*.h5)
  study=()
  [[ ${cmd[0]} == *scaling-study.sh ]] && study=(--study)
  if [[ $rc -ne 0 || ${#files[@]} -ne 1 || ! -e ${files[0]} ]]; then
    failed+=("${cmd[0]} (exit $rc, results: ${files[*]})"); cat run.log
  elif ! "$python" "$here/check_results.py" "${files[0]}" --job-id '' --world-size 2 --launcher openmpi "${study[@]}"; then
    failed+=("${cmd[0]} (invalid ${files[0]})")
  fi
done
[[ ${#failed[@]} -eq 0 ]] || fail "${failed[*]}"
echo PASS

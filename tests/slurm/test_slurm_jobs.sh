#!/usr/bin/env bash
# Submits the CPU configuration of every jobs/slurm script to a real single-node Slurm cluster,
# once with SCALEBENCH_LAUNCH=srun and once with mpirun, and checks that each job completes and
# writes results/<job name>-<job id>.h5 recording that job id and at least one epoch.
#
#   tests/slurm/test_slurm_jobs.sh BUILD/scalebench SOURCE_DIR      (as root; ctest -L slurm runs it)
#
# The cluster (munged, slurmctld, slurmd; see cluster.sh) lives in a temporary folder and is stopped
# by PID when this script exits. Exit codes: 0 pass, 1 fail, 77 skip (no Slurm and no way to install
# it, or not root). SBTEST_KEEP=1 keeps the temporary folder; SBTEST_DATA and SBTEST_ARGS change the
# training run (default: mnist-cnn on 512 synthetic 28x28 images, one epoch).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=common.sh
source "$here/common.sh"
# shellcheck source=cluster.sh
source "$here/cluster.sh"

[[ $# -eq 2 ]] || { echo "usage: $0 SCALEBENCH_BINARY SOURCE_DIR" >&2; exit 2; }
bin=$(realpath "$1")
src=$(realpath "$2")
[[ -x $bin ]] || fail "no scalebench binary at $1"
[[ $(id -u) -eq 0 ]] || skip "needs root (slurmd runs the jobs; SlurmUser=root)"
require_commands slurmctld slurmd sbatch srun scontrol sinfo squeue scancel munged mungekey
export PATH=$PATH:/usr/sbin:/sbin
have_commands mpirun || fail "no mpirun (apt-get install openmpi-bin)"
python=$(find_python)

work=$(mktemp -d /tmp/scalebench-slurm-test.XXXXXX)
finish() {
  local rc=$?
  cluster_stop
  if [[ $rc -ne 0 && $rc -ne $SKIP ]]; then
    echo "--- slurmctld.log (tail)"; tail -n 20 "$work/cluster/log/slurmctld.log" 2>/dev/null || true
    echo "--- slurmd.log (tail)"; tail -n 20 "$work/cluster/log/slurmd.log" 2>/dev/null || true
  fi
  if [[ ${SBTEST_KEEP:-0} == 1 ]]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap finish EXIT
trap 'exit 130' INT TERM  # runs finish through the EXIT trap

cluster_start "$work/cluster" || fail "the Slurm cluster did not start"
cpus=$(nproc)
# The whole test ends inside ctest's TIMEOUT (1500 s), so the EXIT trap always stops the daemons.
deadline=$((SECONDS + ${SBTEST_BUDGET:-1200}))
time_left() {
  local left=$((deadline - SECONDS))
  ((left > 10)) || fail "out of time (SBTEST_BUDGET)"
  echo $((left < 300 ? left : 300))
}

# 1. The cluster itself: a two-task step, and a batch job whose exit code sbatch --wait returns.
echo "== srun -n 2 hostname"
timeout 60 srun --ntasks=2 --overcommit hostname || fail "srun hostname did not run"
rc=0
timeout "$(time_left)" sbatch --wait --quiet --output=/dev/null --wrap 'exit 3' || rc=$?
[[ $rc -eq 3 ]] || fail "sbatch --wait returned $rc for a job that exits 3"

# 2. The job scripts, CPU configuration: no --gres, one CPU per task, tiny training run.
export SCALEBENCH_HOME=$src SCALEBENCH_BIN=$bin SCALEBENCH_DEVICE=cpu SCALEBENCH_MODEL=mnist-cnn
export SCALEBENCH_DATA=${SBTEST_DATA:-synthetic:1x28x28:10:512:256}
export SCALEBENCH_EPOCHS=1 SCALEBENCH_BATCH_SIZE=64 SCALEBENCH_EXTRA_ARGS=${SBTEST_ARGS:-}
export SCALEBENCH_GPUS=1,2 SCALEBENCH_SETTLE_EPOCHS=0
mkdir -p "$work/submit"
cd "$work/submit"  # the logs and results/ land here, as in a user's submit folder

scripts=(one-gpu one-node multi-node scaling-study)
if ! "$bin" scale --help >/dev/null 2>&1; then
  echo "NOTE: this scalebench has no 'scale' command yet; scaling-study.sbatch is only shellchecked"
  scripts=(one-gpu one-node multi-node)
fi

passed=0 failed=()
for script in "${scripts[@]}"; do
  ntasks=2
  [[ $script == one-gpu ]] && ntasks=1
  for launch in srun mpirun; do
    name=sbtest-$script-$launch
    opts=(--parsable --wait --job-name="$name" --nodes=1 --ntasks-per-node="$ntasks" --cpus-per-task=1
          --gres=none --time=00:10:00)
    ((ntasks > cpus)) && opts+=(--overcommit)  # else the job stays pending forever
    echo "== SCALEBENCH_LAUNCH=$launch sbatch ${opts[*]} jobs/slurm/$script.sbatch"
    rc=0
    out=$(SCALEBENCH_LAUNCH=$launch timeout "$(time_left)" sbatch "${opts[@]}" "$src/jobs/slurm/$script.sbatch") || rc=$?
    job=${out%%;*}
    log=$name-$job.out
    results=results/$name-$job.h5
    check=(--job-id "$job" --world-size "$ntasks" --launcher "$([[ $launch == srun ]] && echo slurm || echo openmpi)")
    [[ $script == scaling-study ]] && check+=(--study)
    if [[ $rc -eq 0 ]] && "$python" "$here/check_results.py" "$results" "${check[@]}"; then
      passed=$((passed + 1))
      tail -n 3 "$log"
    else
      failed+=("$script/$launch (sbatch exit $rc, job ${job:-none})")
      echo "--- $log"; cat "$log" 2>/dev/null || echo "(no log)"
    fi
  done
done

# The study file feeds the report, as docs/clusters.md tells users.
study=(results/sbtest-scaling-study-srun-*.h5)
if [[ -e ${study[0]} ]]; then
  echo "== python3 analysis/report.py ${study[0]} --out report"
  if "$python" "$src/analysis/report.py" "${study[0]}" --out report > report.log 2>&1 && [[ -s report/report.md ]]; then
    # awk reads to the end: `grep | head` would fail the script on SIGPIPE (pipefail)
    awk '/^\|/ && n++ < 5' report/report.md
  else
    failed+=("analysis/report.py on ${study[0]}"); cat report.log
  fi
fi

# 3. A failing run fails its job: sbatch --wait passes scalebench's exit code on (set -e in the script).
echo "== a job with an unknown scalebench option must fail"
rc=0
SCALEBENCH_EXTRA_ARGS=--no-such-option timeout "$(time_left)" sbatch --wait --quiet --job-name=sbtest-bad \
  --nodes=1 --ntasks-per-node=2 --cpus-per-task=1 --gres=none "$src/jobs/slurm/one-node.sbatch" || rc=$?
if [[ $rc -eq 0 ]]; then
  failed+=("one-node with --no-such-option exited 0")
else
  echo "exit code $rc, as expected:"; awk '/error/ && n++ < 3' sbtest-bad-*.out
fi

echo "== $passed job(s) passed, ${#failed[@]} failed"
[[ ${#failed[@]} -eq 0 ]] || fail "${failed[*]}"
echo "PASS"

#!/usr/bin/env bash
# Runs every staged GPU test on a GPU node (stage first with scripts/stage_gpu_node.sh BUILD_DIR): the
# single-GPU tests one lane per GPU, the multi-GPU ones (tests/gpu/mpi) on 2 ranks where 2 GPUs are visible,
# then the CUDA engine's NVTX ranges (tests/nvtx, with the staged recorder) and the fault checks on the GPU:
# a rank stopped mid-training is named by the collective watchdog, and the per-step wait it polls costs no
# throughput (mnist-cnn, batch 64, watchdog off and on, twice each).
# Usage: scripts/gpu_node_tests.sh [OUTPUT_DIR] [PARTS]
#   OUTPUT_DIR  default gpu-tests (summary.txt there)
#   PARTS       any of tests,nvtx,watchdog,latency (default all)
set -u
R=${1:-gpu-tests}
PARTS=${2:-tests,nvtx,watchdog,latency}
part() { [[ ",$PARTS," == *",$1,"* ]]; }
# shellcheck source=scripts/gpu_node_env.sh
source "$(dirname "$0")/gpu_node_env.sh"
N=$(grep -c '^GPU' "$R/gpu.txt")
RANKS=$(( N >= 2 ? 2 : 1 ))
say "$(head -1 "$R/gpu.txt"); $N GPU(s); multi-GPU tests on $RANKS rank(s)"

# One test: its log in R/NAME.log, its status in R/NAME.rc. The single-GPU tests run in one lane per visible
# GPU (CUDA_VISIBLE_DEVICES), so a node with several GPUs finishes them sooner; the multi-GPU ones after.
run_test() {
  local t=$1 name rc
  name=$(basename "$t")
  if [[ -f tests/gpu/mpi/$name.cpp ]]; then
    timeout 600 "${MPI[@]}" -np "$RANKS" "$t" > "$R/$name.log" 2>&1
  else
    timeout 600 "$t" > "$R/$name.log" 2>&1
  fi
  rc=$?
  echo "$rc" > "$R/$name.rc"
}
failed=0
if part tests; then
  single=() multi=()
  for t in "$T"/test_*; do
    if [[ -f tests/gpu/mpi/$(basename "$t").cpp ]]; then multi+=("$t"); else single+=("$t"); fi
  done
  for ((lane = 0; lane < N; lane++)); do
    (for ((i = lane; i < ${#single[@]}; i += N)); do CUDA_VISIBLE_DEVICES=$lane run_test "${single[i]}"; done) &
  done
  wait
  for t in "${multi[@]}"; do run_test "$t"; done
  for t in "$T"/test_*; do
    name=$(basename "$t")
    rc=$(cat "$R/$name.rc")
    (( rc != 0 )) && failed=$((failed + 1))
    say "$name rc=$rc $(sed 's/\x1b\[[0-9;]*m//g' "$R/$name.log" | grep -E '^\[  (PASSED|FAILED|SKIPPED) ' | tr '\n' ' ')"
  done
fi
part tests && say "GPU tests failed: $failed"

# The NVTX ranges of a CUDA run, recorded by the staged injection library (tests/nvtx/test_nvtx_ranges.py).
if part nvtx; then
  recorder=$STAGE/nvtx/libsb_nvtx_recorder.so
  if [[ -f $recorder ]]; then
    SCALEBENCH=$S MPIEXEC=mpirun MPIEXEC_FLAGS="${MPI[*]:1}" NVTX_RECORDER=$recorder NVTX_DEVICE=cuda \
      timeout 300 python3 tests/nvtx/test_nvtx_ranges.py > "$R/nvtx_ranges_cuda.log" 2>&1
    rc=$?
    say "nvtx_ranges_cuda rc=$rc $(tail -1 "$R/nvtx_ranges_cuda.log")"
  else
    say "nvtx_ranges_cuda: not staged (the build has no nvtx3 headers)"
  fi
fi

# The watchdog on the GPU: rank 1 stopped in the middle of training.
if part watchdog && (( RANKS == 2 )); then
  timeout 120 "${MPI[@]}" -np 2 "$S" train --device cuda --model mnist-cnn --data synthetic:1x28x28:10:640000:1000 --batch-size 64 \
    --epochs 2 --log-interval 500 --collective-timeout 10 > "$R/watchdog.log" 2>&1 &
  job=$!  # by PID: the test lanes above were jobs too, so a job number would not name this one
  for _ in $(seq 1 600); do grep -q "step 500/" "$R/watchdog.log" && break; sleep 0.1; done
  victim=$(pgrep -f "^$S train --device cuda --model mnist-cnn" | tail -1)
  stopped=$(date +%s); kill -STOP "$victim"; wait "$job"; rc=$?
  say "watchdog rc=$rc after $(( $(date +%s) - stopped )) s: $(grep -m1 'did not arrive' "$R/watchdog.log")"
  kill -KILL "$victim" 2>/dev/null
fi

# The polled per-step wait against the blocking one, on the most latency-bound step we run.
part latency && for run in 1 2; do
  for timeout_s in 0 600; do
    "$S" train --device cuda --model mnist-cnn --data synthetic:1x28x28:10:64000:1000 --batch-size 64 --precision tf32 \
      --epochs 3 --collective-timeout "$timeout_s" > "$R/latency-$timeout_s-$run.log" 2>&1
    say "mnist-cnn bs64 tf32 --collective-timeout $timeout_s run $run: $(grep '^epoch' "$R/latency-$timeout_s-$run.log" | awk '{print $(NF-3)}' | tr '\n' ' ')img/s"
  done
done
tar czf "$R.tgz" -C "$(dirname "$R")" "$(basename "$R")"  # every log in one file

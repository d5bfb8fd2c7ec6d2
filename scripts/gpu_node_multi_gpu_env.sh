# shellcheck shell=bash disable=SC2034
# Sourced by scripts/gpu_node_phase_b*.sh and c*.sh with R set: scripts/gpu_node_env.sh, then
# the launcher, the GPU count N, the study's GPU counts `list`, `say`, `study NAME ARGS...`, and for the
# 2-GPU investigations `wrn_variant`, `ddp_wrn_weak`, `sample_clocks` and `mpi_gpu_tests`.
# shellcheck source=scripts/gpu_node_env.sh
source "$(dirname "${BASH_SOURCE[0]}")/gpu_node_env.sh"
N=$(wc -l < "$R/gpu.txt")
cat "$R/gpu.txt"
nvidia-smi topo -m > "$R/topo.txt" 2>&1
MPI=(mpirun --allow-run-as-root --bind-to none -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE -x PYTHONUNBUFFERED)
gpus=1; list=1; while (( gpus * 2 <= N )); do gpus=$((gpus * 2)); list="$list,$gpus"; done
say "GPUs: $N, study counts $list"

study() {  # name, extra args...
  local name=$1; shift
  timeout 420 "${MPI[@]}" -np "$N" "$S" scale --device cuda --gpus "$list" --warmup-epochs 1 --epochs 2 --out "$R/$name.h5" "$@" > "$R/$name.log" 2>&1
  say "$name rc=$?"; grep -A8 "images/s" "$R/$name.log" | tee -a "$R/summary.txt"
}

# The wrn weak-scaling study of the 2-GPU investigations (scripts/gpu_node_phase_c*.sh).
WRN_WEAK=(--model wrn --data synthetic:3x32x32:100:76800:1000 --precision bf16 --layout nhwc --batch-size 256 --scaling weak --warmup-epochs 1 --epochs 2)
wrn_variant() {  # name, GPU list, environment assignments (comma-separated, may be empty), extra args...
  local name=$1 gpus=$2 envs=$3; shift 3
  local xs=() kv
  for kv in ${envs//,/ }; do xs+=(-x "$kv"); done
  timeout 200 "${MPI[@]}" "${xs[@]}" -np 2 "$S" scale --device cuda --gpus "$gpus" "${WRN_WEAK[@]}" --out "$R/$name.h5" "$@" > "$R/$name.log" 2>&1
  say "$name ($envs $*) rc=$? $(grep -A3 'images/s' "$R/$name.log" | tail -n +2 | tr -s ' ' | tr '\n' ';')"
}
ddp_wrn_weak() {  # PyTorch DDP's wrn at 256 images per GPU, at each GPU count given
  local n
  for n in "$@"; do
    timeout 150 "${MPI[@]}" -np "$n" "$P" bench/pytorch_reference.py --model wrn --precision bf16 --channels-last --batch-size 256 \
        --steps 50 --warmup 15 --reference-out "$R/pt-wrn-weak.json" > "$R/pt-wrn-$n.log" 2>&1
    say "pt wrn $n gpus rc=$? $(tail -1 "$R/pt-wrn-$n.log")"
  done
}
sample_clocks() {  # SM and memory clocks, power and temperature every 250 ms into $R/clocks.csv (run with &)
  exec nvidia-smi --query-gpu=index,timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv -lms 250 > "$R/clocks.csv" 2>&1
}
mpi_gpu_tests() {  # test executables in .stage/tests, each run on 2 ranks with a GPU each
  local t
  for t in "$@"; do
    timeout 200 "${MPI[@]}" -np 2 ".stage/tests/$t" > "$R/$t.log" 2>&1
    say "$t rc=$? $(grep -E '^\[  (PASSED|FAILED)|^\[rank|Failure' "$R/$t.log" | head -12 | tr '\n' ' ')"
  done
}

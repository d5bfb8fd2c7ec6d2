# Sourced by scripts/gpu_node_phase_b*.sh with R set: the node's library paths (NVLink multicast off),
# the launcher, the GPU count N, the study's GPU counts `list`, `say` and `study NAME ARGS...`.
V=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$PWD/.stage/lib:$V/cudnn/lib:$V/nccl/lib:$V/cu13/lib NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
P=/opt/torch/.venv/bin/python3
S=.stage/bin/scalebench
mkdir -p "$R"
N=$(nvidia-smi -L | wc -l)
nvidia-smi -L | tee "$R/gpu.txt"
nvidia-smi topo -m > "$R/topo.txt" 2>&1
MPI=(mpirun --allow-run-as-root --bind-to none -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE -x PYTHONUNBUFFERED)
say() { echo "$*" | tee -a "$R/summary.txt"; }
gpus=1; list=1; while (( gpus * 2 <= N )); do gpus=$((gpus * 2)); list="$list,$gpus"; done
say "GPUs: $N, study counts $list"

study() {  # name, extra args...
  local name=$1; shift
  timeout 420 "${MPI[@]}" -np "$N" "$S" scale --device cuda --gpus "$list" --warmup-epochs 1 --epochs 2 --out "$R/$name.h5" "$@" > "$R/$name.log" 2>&1
  say "$name rc=$?"; grep -A8 "images/s" "$R/$name.log" | tee -a "$R/summary.txt"
}

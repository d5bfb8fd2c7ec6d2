# shellcheck shell=bash disable=SC2034
# Sourced, with R set, by every scripts/gpu_node_*.sh: the node's library paths (NVLink multicast off),
# PyTorch's python P, the staged binary S and tests T, the output folder R with the GPU list in gpu.txt,
# and `say` (prints and appends to $R/summary.txt).
V=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$PWD/.stage/lib:$V/cudnn/lib:$V/nccl/lib:$V/cu13/lib NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
P=/opt/torch/.venv/bin/python3
S=.stage/bin/scalebench
T=.stage/tests
mkdir -p "$R"
say() { echo "$*" | tee -a "$R/summary.txt"; }
nvidia-smi -L > "$R/gpu.txt" 2>&1

# shellcheck shell=bash disable=SC2034
# Sourced, with R (the output folder) set, by the GPU-node scripts: scripts/gpu_node_tests.sh,
# scripts/gpu_node_faults.sh and bench/gpu_node.sh. It makes R, puts the GPU list in R/gpu.txt, and sets
#   P    PyTorch's python                  $SCALEBENCH_TORCH_PYTHON   [python3]
#   S    the scalebench binary             $SCALEBENCH_BIN            [$SCALEBENCH_STAGE/bin/scalebench]
#   T    the staged GPU tests              $SCALEBENCH_STAGE/tests    [.stage/tests]
#   MPI  the mpirun command line that passes this environment on to the ranks
#   say  prints its arguments and appends them to R/summary.txt
# LD_LIBRARY_PATH gets $SCALEBENCH_STAGE/lib (the libraries scripts/stage_gpu_node.sh copied) and
# $SCALEBENCH_GPU_LIBS: colon-separated folders holding cuDNN, NCCL and the CUDA runtime for a node that
# has them only inside PyTorch's wheels. Its default is every nvidia/*/lib folder of the `nvidia` package
# that $SCALEBENCH_TORCH_PYTHON imports (nothing where it imports none); set it empty on a node whose
# system libraries serve. NVLink multicast stays off (NCCL_NVLS_ENABLE=0) unless NCCL_NVLS_ENABLE is set:
# the figures of docs/performance.md were measured without it.
P=${SCALEBENCH_TORCH_PYTHON:-python3}
STAGE=$(realpath -m "${SCALEBENCH_STAGE:-.stage}")
# shellcheck source=scripts/unpack_stage.sh
source "$(dirname "${BASH_SOURCE[0]}")/unpack_stage.sh"
unpack_stage "$STAGE" || exit 2
S=${SCALEBENCH_BIN:-$STAGE/bin/scalebench}
T=$STAGE/tests
if [[ -z ${SCALEBENCH_GPU_LIBS+set} ]]; then
  SCALEBENCH_GPU_LIBS=$("$P" -c 'import glob, os, nvidia
print(":".join(sorted(d for root in nvidia.__path__ for d in glob.glob(os.path.join(root, "*", "lib")))))' 2>/dev/null || true)
fi
export LD_LIBRARY_PATH=$STAGE/lib${SCALEBENCH_GPU_LIBS:+:$SCALEBENCH_GPU_LIBS}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0} PYTHONUNBUFFERED=1
MPI=(mpirun --bind-to none -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE -x PYTHONUNBUFFERED)
if [[ $(id -u) -eq 0 ]]; then MPI+=(--allow-run-as-root); fi
mkdir -p "$R"
say() { echo "$*" | tee -a "$R/summary.txt"; }
nvidia-smi -L > "$R/gpu.txt" 2>&1

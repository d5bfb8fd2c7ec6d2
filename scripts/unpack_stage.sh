# shellcheck shell=bash
# Sourced by scripts/gpu_node_env.sh and bench/gpu_node.sh. unpack_stage STAGE: a stage copied to the node
# as one archive (SCALEBENCH_STAGE_ARCHIVE=1 scripts/stage_gpu_node.sh writes STAGE.tar.xz) is unpacked
# beside it, once; an existing STAGE folder is left as it is.
unpack_stage() {
  local stage=$1
  [[ -d $stage || ! -f $stage.tar.xz ]] && return 0
  tar -xJf "$stage.tar.xz" -C "$(dirname "$stage")" || { echo "cannot unpack $stage.tar.xz" >&2; return 1; }
}

# Helpers shared by the test scripts of tests/slurm (sourced).
# shellcheck shell=bash

SKIP=77  # ctest's SKIP_RETURN_CODE for these tests (tests/slurm/CMakeLists.txt)

skip() { echo "SKIP: $*"; exit "$SKIP"; }
fail() { echo "FAIL: $*" >&2; exit 1; }

# True when every command named is on PATH (Slurm's daemons live in /usr/sbin).
have_commands() {
  local c
  for c in "$@"; do PATH=$PATH:/usr/sbin:/sbin command -v "$c" >/dev/null 2>&1 || return 1; done
}

# Makes the commands named available: installs the slurm test dependencies when one is missing, and
# skips the test when they cannot be installed.
require_commands() {
  have_commands "$@" && return 0
  echo "missing some of: $*; trying tests/slurm/install_deps.sh"
  "$(dirname "${BASH_SOURCE[0]}")/install_deps.sh" || skip "cannot install: $* (see install_deps.sh)"
  have_commands "$@" || skip "still missing after install_deps.sh: $*"
}

# A python3 that imports h5py (the project's Debian python3-h5py may not be the first python3 on PATH).
find_python() {
  local p
  for p in python3 /usr/bin/python3; do
    "$p" -c 'import h5py' >/dev/null 2>&1 && { command -v "$p"; return 0; }
  done
  fail "no python3 with h5py (apt-get install python3-h5py)"
}

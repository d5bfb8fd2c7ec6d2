#!/usr/bin/env bash
# Static checks of everything under jobs/: shellcheck of every script (and of the shell sections of
# the Apptainer definition), and the syntax checker for the HTCondor submit file and the definition
# (check_job_files.py). Needs no daemons. Exit codes: 0 pass, 1 fail, 77 skip (no shellcheck and no
# way to install it).
#
#   tests/slurm/test_job_files.sh SOURCE_DIR
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=common.sh
source "$here/common.sh"
[[ $# -eq 1 ]] || { echo "usage: $0 SOURCE_DIR" >&2; exit 2; }
src=$(realpath "$1")
require_commands shellcheck

extract=$(mktemp -d /tmp/scalebench-jobfiles.XXXXXX)
trap 'rm -rf "$extract"' EXIT

status=0
echo "== check_job_files.py (HTCondor submit files, Apptainer definitions)"
python3 "$here/check_job_files.py" "$src" --extract "$extract" || status=1

# Scripts: by extension, or by a shell shebang (the .sub and .def files are neither).
scripts=()
while IFS= read -r -d '' f; do
  if [[ $f == *.sh || $f == *.sbatch ]] || head -n 1 "$f" | grep -qE '^#!.*(ba)?sh'; then scripts+=("$f"); fi
done < <(find "$src/jobs" "$src/tests/slurm" -type f ! -name '*.py' ! -name '*.txt' ! -name '.shellcheckrc' -print0 | sort -z)
echo "== shellcheck ${#scripts[@]} scripts under jobs/ and tests/slurm/"
shellcheck --version | sed -n 2p
# Sourced helpers are followed (jobs/.shellcheckrc: source-path=SCRIPTDIR).
for f in "${scripts[@]}"; do
  if shellcheck "$f"; then echo "ok   ${f#"$src"/}"; else echo "FAIL ${f#"$src"/}"; status=1; fi
done
# Apptainer runs these sections with /bin/sh.
for f in "$extract"/*.sh; do
  [[ -e $f ]] || continue
  if shellcheck -s sh "$f"; then echo "ok   $(basename "$f") (from the .def)"; else echo "FAIL $(basename "$f")"; status=1; fi
done
[[ $status -eq 0 ]] && echo PASS
exit "$status"

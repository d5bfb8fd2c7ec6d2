#!/usr/bin/env bash
# Installs what the slurm-labelled tests need: Debian 12's Slurm 22.05 (controller, node daemon,
# client commands), munge and shellcheck. Idempotent: does nothing when all are installed. Exits 1
# when they are missing and cannot be installed (not root, no apt-get), which the tests map to SKIP.
set -euo pipefail

packages=(slurmctld slurmd slurm-client munge shellcheck)
missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ $status == "install ok installed" ]] || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
  echo "install_deps: missing ${missing[*]}; as root run: apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "install_deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# The package scripts try to start the daemons; in a container without systemd that fails harmlessly.
# policy-rc.d keeps them from starting where init scripts would work, so no daemon outlives this.
policy=/usr/sbin/policy-rc.d
own_policy=0
if [[ ! -e $policy ]]; then
  printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod 755 "$policy" && own_policy=1
fi
trap '[[ $own_policy -eq 1 ]] && rm -f "$policy"' EXIT
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"

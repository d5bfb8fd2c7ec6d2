#!/usr/bin/env bash
# `make run`: how training scales and where the time goes. A scaling study (`scalebench scale`) of
# mnist-cnn on Fashion-MNIST with the model's default recipe (the MNIST guide's Adadelta + StepLR), at 1
# and 2 ranks on the CPU, or 1, 2 and 4 GPUs (up to those visible) on a GPU machine; then the report
# (report.md and its PNG plots). The terminal gets scale's study table (images/s, speedup and efficiency:
# the report's figures too) and the report's table of where the time goes.
#
# usage: scripts/run_demo.sh [BUILD_DIR] [OUT_DIR]
# The demo's size comes from the environment, for tests and quick looks (defaults: the demo's):
#   DEMO_EPOCHS (measured epochs per configuration), DEMO_TRAIN_LIMIT, DEMO_TEST_LIMIT (0: all)
#   DEMO_DEVICE (auto, cpu or cuda), MPIRUN (the launcher), MPIRUN_FLAGS (its flags)
#   DEMO_DATA (a folder with the Fashion-MNIST IDX files; default: Debian's dataset-fashion-mnist)
# A demo that fails leaves no OUT_DIR behind: it writes into a staging folder that becomes OUT_DIR only at
# the end, and a failed run's partial study is kept as OUT_DIR.failed-<time>, which blocks nothing.
set -euo pipefail
build=${1:-build}
out_dir=${2:-results/demo}
exe="$build/scalebench"
repo=$(cd "$(dirname "$0")/.." && pwd)

if [[ -e $out_dir ]]; then
  echo "scalebench demo: $out_dir exists from an earlier run and results are never overwritten;" \
       "move it away, or choose another folder: make run DEMO_OUT=results/demo-2" >&2
  exit 2
fi
[[ -x $exe ]] || { echo "scalebench demo: $exe is missing; build first (make program)" >&2; exit 2; }

# The data is checked before anything runs or is written.
debian_data=/usr/share/datasets/fashion-mnist
data_dir=${DEMO_DATA:-}
if [[ -n $data_dir ]]; then
  [[ -d $data_dir ]] || { echo "scalebench demo: DEMO_DATA=$data_dir is not a folder; give the folder that holds" \
                               "train-images-idx3-ubyte.gz and the other Fashion-MNIST IDX files" >&2; exit 2; }
  data=fashion-mnist:$data_dir
elif [[ -d $debian_data ]]; then
  data=fashion-mnist
else
  echo "scalebench demo: no Fashion-MNIST at $debian_data (Debian's dataset-fashion-mnist);" \
       "install it (apt-get install dataset-fashion-mnist) or give a folder of its IDX files: make run DEMO_DATA=DIR" >&2
  exit 2
fi

launcher=${MPIRUN:-mpirun}
read -r -a launcher_flags <<<"${MPIRUN_FLAGS:---oversubscribe}"
if [[ $(id -u) -eq 0 && " ${launcher_flags[*]} " != *" --allow-run-as-root "* ]]; then
  launcher_flags+=(--allow-run-as-root)
fi

# The GPU counts of the study: 1, 2 and 4 up to the GPUs visible when scalebench can use them, else two
# CPU ranks. scalebench resolves --device auto itself and says so on its first line.
device=${DEMO_DEVICE:-auto}
gpus=0
visible=0
if command -v nvidia-smi >/dev/null 2>&1; then visible=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true); fi
if [[ $device != cpu ]] && (( visible > 0 )); then
  if cuda_error=$("$exe" info --device cuda 2>&1 >/dev/null); then
    gpus=$visible
  else
    # A GPU machine whose demo would run on the CPU: say why, loudly, before anything runs.
    backend="$build/cuda_backend.txt"
    if [[ -f $backend && $(head -c 3 "$backend") == OFF ]]; then
      why="the CUDA backend was not built: $(cut -c6- "$backend")"
      remedy="make the missing part findable (README.md, 'Building on a cluster'), then rebuild: rm -rf $build && make run"
    else
      why="scalebench cannot use them: ${cuda_error:-scalebench info --device cuda failed}"
      remedy="check the driver (nvidia-smi) and CUDA_VISIBLE_DEVICES, then run make run again"
    fi
    printf '%s\n' "" "scalebench demo: WARNING: this machine has $visible GPU(s), but $why" \
           "scalebench demo: the demo runs on the CPU instead. For the GPUs, $remedy" "" >&2
    [[ $device == cuda ]] && exit 2
  fi
fi
if (( gpus >= 4 )); then counts=1,2,4; np=4
elif (( gpus >= 2 )); then counts=1,2; np=2
elif (( gpus == 1 )); then counts=1; np=1
else counts=1,2; np=2
fi

# Sized for about two minutes on a 2-core machine: 10,000 of the 60,000 training images for 3 epochs
# reach 82-86% test accuracy (all 10,000 test images) at 1 and 2 ranks. The CPU needs no settle epoch (nothing
# to autotune or capture); a GPU gets one, and trains on all 60,000 images.
if (( gpus > 0 )); then default_limit=0 settle=1; else default_limit=10000 settle=0; fi
train_limit=${DEMO_TRAIN_LIMIT:-$default_limit}
epochs=${DEMO_EPOCHS:-3}
test_limit=${DEMO_TEST_LIMIT:-0}

mkdir -p "$(dirname "$out_dir")"
stage=$(mktemp -d "${out_dir%/}.incomplete.XXXXXX")
finish() {
  local rc=$?
  [[ -d $stage ]] || return 0
  if [[ -s $stage/study.h5 ]]; then
    local kept="${out_dir%/}.failed-$(date +%Y%m%d-%H%M%S)"
    mv "$stage" "$kept" && echo "scalebench demo: failed (exit $rc); its partial study is in $kept" >&2
  else
    rm -rf "$stage"
  fi
}
trap finish EXIT
study="$stage/study.h5"
args=(scale --model mnist-cnn --data "$data" --device "$device" --gpus "$counts" --epochs "$epochs" --settle-epochs "$settle"
      --train-limit "$train_limit" --test-limit "$test_limit" --out "$study")
echo "scalebench demo: $launcher -np $np $exe ${args[*]}"
"$launcher" "${launcher_flags[@]}" -np "$np" "$exe" "${args[@]}"
echo
# From the staging folder, so that the report names the study as it will lie beside it (study.h5).
(cd "$stage" && python3 "$repo/analysis/report.py" study.h5 --out . --title "scalebench demo: mnist-cnn on Fashion-MNIST" >/dev/null)
mv "$stage" "$out_dir"
# scale printed the study's figures above (report.md's scaling table holds the same numbers); from the
# report, the terminal gets where the time goes.
awk '/^## Scaling/ {on = 1; next}
     on && /^## / {exit}
     on && /^### / {phases = 0}
     on && /^Where the time goes/ {phases = 1; print "Where the time goes: seconds per epoch in each phase (the maximum over ranks):"; next}
     on && phases && /^\|/ {print}' \
  "$out_dir/report.md"
echo
echo "scalebench demo: the full report is $out_dir/report.md, with its plots:" \
     "$(cd "$out_dir" && ls -- *.png | tr '\n' ' ')"
echo "scalebench demo: done in ${SECONDS} s"

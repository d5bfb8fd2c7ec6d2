#!/usr/bin/env bash
# Reproduces the figures of docs/performance.md on one GPU node, scalebench and PyTorch side by side in one
# invocation, and writes them with their logs and a report to OUT_ROOT/<gpu>-x<count>-<date>/
# (docs/benchmarks.md, "One GPU node: bench/gpu_node.sh"). Parts, in order (--parts picks some):
#   one-gpu  scalebench against PyTorch eager on GPU 0: wrn bf16 NHWC vs AMP bf16 channels_last, wrn tf32
#            NCHW vs fp32 (TF32 convolutions), wrn tf32 NHWC (MFU), mnist-cnn fp32 and tf32 vs fp32 eager
#   compile  PyTorch torch.compile on GPU 0: wrn bf16 channels_last, mnist-cnn (reduce-overhead)
#   tta      time to 91% Fashion-MNIST test accuracy: scalebench fp32 and tf32, PyTorch
#   scaling  weak and strong studies of wrn and mnist-cnn on 1, 2, 4, ... of the visible GPUs
#            (`scalebench scale`) and PyTorch DDP at the same counts (at least 2 GPUs)
#   comm     the all-reduce sweep, fp32 and bf16, 1 KiB to 256 MiB, on every visible GPU (at least 2)
#   plans    the first epoch of the wrn at batch 256 bf16: empty plan cache, the same command again (warm
#            cache), and an empty cache with --autotune off
#   learning the wrn trained for 2 epochs on Fashion-MNIST written as CIFAR-100 (bench/fashion_mnist_as_cifar100.py),
#            bf16, at the WRN guide's recipe (SGD lr 0.01, batch 256) and a faster one (lr 0.05, momentum
#            0.9, batch 128), seeds 1-3: scalebench and PyTorch (pytorch_reference.py --learn), mean test accuracy
#   predict  the step model checked on this node (docs/prediction.md): a weak wrn study on 1, 2, 4, ... of the
#            visible GPUs (3 repeats) and the all-reduce sweep, then `scalebench predict --check`, which predicts
#            each larger count from the 1-GPU point and compares; over the links of --links (NVLink/shared memory,
#            NCCL forced onto its network transport: NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1), at least 2 GPUs
#   predict-strong the same check under strong scaling: a strong wrn study at a global batch of 256 on 1, 2, 4, ...
#            of the visible GPUs, with the 1-GPU compute at each per-GPU batch it reaches (--sweep-batch-size
#            256/N for every count N), 3 repeats, the same sweep, then `scalebench predict --batch-size 256 --check`
#   slow-link the wrn (256 per GPU, bf16) on every visible GPU over NCCL's network transport, two runs each:
#            scalebench and PyTorch DDP, with fp32 gradients and with the all-reduce in bf16 (--allreduce-bf16 on
#            both sides; PyTorch's bf16_compress_hook), at least 2 GPUs
#   bars     the one-GPU ratios of docs/performance.md's headline table, on GPU 0, two runs of each program
#            alternating (one plan cache per model, so a second run reuses the first's choices): scalebench wrn
#            bf16 NHWC against torch.compile (default mode) bf16 channels_last, and scalebench mnist-cnn tf32 and
#            fp32 (no TF32) NHWC at batch 64 against torch.compile reduce-overhead; the medians and their ratios
#            in summary.txt
#   max-autotune the wrn bf16 NHWC on GPU 0 against torch.compile in its default and max-autotune modes (bf16
#            channels_last), two runs of each, alternating (max-autotune's first run spends minutes tuning)
#   dp       nn.DataParallel against DDP on 1, 2 and 4 GPUs (as many as are visible), two runs each: scalebench
#            --parallel dp and ddp, PyTorch --dp and DDP, mnist-cnn (64 per GPU, tf32) and wrn (256 per
#            GPU, bf16); img/s of each (docs/data_parallel.md)
#   cards    the wrn (256 per GPU, bf16 NHWC, 300 steps a rank an epoch, 4 epochs) on each visible GPU alone,
#            then on all of them at once: each run's img/s and GPU clocks, and the job's weak-scaling efficiency
#            against GPU 0 alone (where a study's 1-GPU point runs) and against the slowest card alone
#            (docs/benchmarks.md, "Clocks")
#   io       the input pipeline alone on GPU 0, two runs of each program, alternating: `scalebench io` and
#            pytorch_reference.py --io (DataLoader; torchvision.io.decode_jpeg in the workers, or nvJPEG),
#            CPU and GPU decoding, 1, 2, 3, 4, 8 and 15 workers (GPU decoding peaks at 2-4), batch 256,
#            40 batches; bench/io_table.py sets the medians side by side (io/table.txt)
#   files    resnet50 (256, bf16 NHWC, 40 steps an epoch, 3 epochs) trained from the JPEG folder on GPU 0, two
#            runs each: scalebench --decode gpu, --decode cpu --workers 15 and synthetic 3x224x224 data;
#            torch.compile with a 15-worker DataLoader decoding on the CPU, with nvJPEG, and on synthetic data
#   resnets  the ResNet bars on GPU 0, two runs of each program, alternating: resnet50 (256, NHWC, 40 steps an epoch,
#            3 epochs) in fp16 and bf16 on synthetic data against torch.compile in the same precision; resnet50 fp16
#            from the JPEG folder (--decode gpu --workers 3, the cores it keeps busy); resnet18 bf16 for 8 epochs
#            from the folder and on synthetic data (epochs 5-8); resnet50 fp16's peak memory with 4 batches on the
#            device against PyTorch's max_memory_allocated; each model's fp16 step by kind of work from a kernel
#            trace, where libkernel_trace.so was built (bench/kernel_trace_summary.py --groups)
# The io, files and resnets parts read one ImageNet-sized JPEG folder (scripts/make_image_data.py imagenet-like:
# 1,000 classes, 11 train and 1 val images each), written once into OUT_ROOT/image-data/ and kept for later
# invocations.
#   learning-images resnet18 trained for 8 epochs at torchvision's reference recipe on another such folder (100
#            classes, 260 train and 50 val images each, written once beside the first), bf16, seeds 1-2
#            alternating: scalebench --decode gpu and pytorch_reference.py --learn imagefolder:, and scalebench in fp16;
#            mean test accuracy of each
#
# Usage: bench/gpu_node.sh [--python PY] [--data DIR] [--bin SCALEBENCH] [--out OUT_ROOT] [--parts LIST]
#                          [--links LIST]
# Each option has an environment variable; the option wins. Defaults in brackets:
#   --python  SCALEBENCH_TORCH_PYTHON  PyTorch's interpreter, e.g. /opt/torch/.venv/bin/python3 [python3]
#   --data    SCALEBENCH_FMNIST        Fashion-MNIST IDX files [.stage-data/fashion-mnist when staged,
#                                      else /usr/share/datasets/fashion-mnist (Debian's dataset-fashion-mnist)]
#   --bin     SCALEBENCH_BIN           the scalebench binary, built with CUDA [.stage/bin/scalebench when
#                                      staged (scripts/stage_gpu_node.sh), else build/scalebench]
#   --out     SCALEBENCH_BENCH_OUT     where the run's folder goes [results]
#   --parts   SCALEBENCH_BENCH_PARTS   comma-separated [one-gpu,compile,tta,scaling,comm]; also plans, learning,
#                                      predict, predict-strong, slow-link, bars, max-autotune, dp, cards, io, files,
#                                      resnets, learning-images
#   --links   SCALEBENCH_BENCH_LINKS   the interconnects of the predict parts: nvlink (as NCCL chooses), network
#                                      (NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1) [nvlink,network]
# Also: SCALEBENCH_REPORT_PYTHON, a python with h5py and matplotlib for analysis/report.py [python3];
# SCALEBENCH_GPU_LIBS, SCALEBENCH_STAGE and NCCL_NVLS_ENABLE as scripts/gpu_node_env.sh says.
# Run it from the checkout's root with nothing else on the GPUs. Exit status 0 when every command
# succeeded, 1 when one failed (summary.txt says which), 2 for bad arguments.
# shellcheck source-path=SCRIPTDIR/..
set -uo pipefail

usage() { sed -n '/^# Usage:/,/^# Also:/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; }
die() { echo "gpu_node.sh: $*" >&2; exit 2; }

python=${SCALEBENCH_TORCH_PYTHON:-python3}
data=${SCALEBENCH_FMNIST:-}
bin=${SCALEBENCH_BIN:-}
out_root=${SCALEBENCH_BENCH_OUT:-results}
parts=${SCALEBENCH_BENCH_PARTS:-one-gpu,compile,tta,scaling,comm}
links=${SCALEBENCH_BENCH_LINKS:-nvlink,network}
while [[ $# -gt 0 ]]; do
  case $1 in
    --python|--data|--bin|--out|--parts|--links)
      [[ $# -ge 2 ]] || die "$1 needs a value"
      case $1 in
        --python) python=$2 ;; --data) data=$2 ;; --bin) bin=$2 ;; --out) out_root=$2 ;; --parts) parts=$2 ;;
        --links) links=$2 ;;
      esac
      shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage; die "unknown argument '$1'" ;;
  esac
done

# Every check before the first measurement.
[[ -f bench/pytorch_reference.py && -f analysis/report.py ]] || die "run it from the scalebench checkout's root"
known_parts=(one-gpu compile tta scaling comm plans learning learning-images predict predict-strong slow-link bars max-autotune dp cards io files resnets)
for part in ${parts//,/ }; do
  [[ " ${known_parts[*]} " == *" $part "* ]] ||
    die "--parts: unknown part '$part'; choose from $(printf '%s, ' "${known_parts[@]}" | sed 's/, $//')"
done
for link in ${links//,/ }; do
  [[ $link =~ ^(nvlink|network)$ ]] || die "--links: unknown interconnect '$link'; choose from nvlink, network"
done
part() { [[ ",$parts," == *",$1,"* ]]; }
source scripts/unpack_stage.sh
unpack_stage "${SCALEBENCH_STAGE:-.stage}" || exit 2
if [[ -z $bin ]]; then
  bin=build/scalebench
  [[ -x .stage/bin/scalebench ]] && bin=.stage/bin/scalebench
fi
[[ -x $bin ]] || die "no scalebench binary at '$bin'; build with -DSCALEBENCH_CUDA=ON or stage one (scripts/stage_gpu_node.sh), or pass --bin"
if [[ -z $data ]]; then
  data=/usr/share/datasets/fashion-mnist
  [[ -d .stage-data/fashion-mnist ]] && data=.stage-data/fashion-mnist
fi
if { part tta || part learning; } && ! compgen -G "$data/train-images-idx3-ubyte*" > /dev/null; then
  die "no Fashion-MNIST in '$data'; install dataset-fashion-mnist, pass --data DIR, or leave tta and learning out of --parts"
fi
"$python" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null ||
  die "'$python' cannot import torch or sees no GPU; pass PyTorch's interpreter with --python"
if { part io || part files || part resnets || part learning-images; } && ! "$python" -c 'import torchvision' 2>/dev/null; then
  die "'$python' cannot import torchvision, which the io, files, resnets and learning-images parts use; install it beside torch or leave them out of --parts"
fi
nvidia-smi -L > /dev/null 2>&1 || die "nvidia-smi lists no GPU: run this on a GPU node"
source jobs/lib/scalebench-job.sh  # sb_visible_gpus, sb_powers_of_two
N=$(sb_visible_gpus)
((N > 0)) || die "no GPU visible (CUDA_VISIBLE_DEVICES is empty)"
report_python=${SCALEBENCH_REPORT_PYTHON:-python3}
make_report=1
"$report_python" -c 'import h5py, matplotlib' 2>/dev/null || make_report=0

# The run's folder: a new one, never one that holds an earlier run.
model=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
short=$(grep -oE '[A-Z]+[0-9]+[A-Z]*' <<< "${model#NVIDIA }" | head -1)
[[ -n $short ]] || short=${model#NVIDIA }
short=$(tr '[:upper:] ' '[:lower:]-' <<< "$short" | tr -cd 'a-z0-9-')
R=$out_root/${short:-gpu}-x$N-$(date -u +%Y-%m-%d)
base=$R
for ((i = 2; ; i++)); do [[ -e $R ]] || break; R=$base-$i; done
mkdir -p "$R" || die "cannot create '$R'"
export SCALEBENCH_TORCH_PYTHON=$python SCALEBENCH_BIN=$bin
source scripts/gpu_node_env.sh  # P, S, MPI, say, LD_LIBRARY_PATH; gpu.txt

say "scalebench GPU-node benchmark: $N GPU(s) ($model), parts $parts, into $R"
nvidia-smi -q > "$R/nvidia-smi.txt" 2>&1
nvidia-smi topo -m > "$R/topo.txt" 2>&1
"$S" info > "$R/info.txt" 2>&1 || say "note: '$S info' failed (see $R/info.txt)"
"$P" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn",
torch.backends.cudnn.version(), "nccl", torch.cuda.nccl.version())' > "$R/torch.txt" 2>&1
failed=0
# GPU telemetry for the whole invocation (telemetry.csv: unix time, then nvidia-smi's fields per GPU, every
# 0.25 s), so that a slower multi-GPU step can be told apart from lower clocks or a power cap;
# bench/telemetry_summary.py sets it beside each run's interval in runs.txt.
fields=index,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu,clocks_event_reasons.active
nvidia-smi --query-gpu="$fields" --format=csv,noheader,nounits > /dev/null 2>&1 || fields=${fields/clocks_event/clocks_throttle}
echo "time,$fields" > "$R/telemetry.csv"
( while :; do
    t=$(date +%s.%N)
    nvidia-smi --query-gpu="$fields" --format=csv,noheader,nounits 2>/dev/null | sed "s/^/$t, /"
    sleep 0.25
  done >> "$R/telemetry.csv" ) &
telemetry_pid=$!
trap 'kill $telemetry_pid 2>/dev/null' EXIT
# run NAME TIMEOUT COMMAND...: the command's output in NAME.log, the command in commands.txt, its interval
# in runs.txt, its status and headline lines in summary.txt.
run() {
  local name=$1 limit=$2 rc begin
  shift 2
  echo "$*" >> "$R/commands.txt"
  begin=$(date +%s.%N)
  timeout "$limit" "$@" > "$R/$name.log" 2>&1
  rc=$?
  echo "$name $begin $(date +%s.%N)" >> "$R/runs.txt"
  ((rc == 0)) || failed=$((failed + 1))
  say "$name rc=$rc $(grep -E '^epoch|^time to|images/s|img/s|test accuracy' "$R/$name.log" | tail -2 | tr -s ' ' | tr '\n' ' ')"
}
# The learning parts' figures, a line each: scalebench's test accuracy after the last epoch of each named
# run's log, and PyTorch's of each --learn JSON, in percent; mean_accuracy: their mean with the values.
last_test_accuracy() {
  local name
  for name in "$@"; do grep '^epoch' "$R/$name.log" | tail -1 | grep -oE 'test acc +[0-9.]+' | awk '{print $3}'; done
}
json_test_accuracy() {
  "$P" -c 'import json, sys
print("\n".join("%.2f" % (json.load(open(f))["test_accuracy"] * 100) for f in sys.argv[1:]))' "$@" 2>/dev/null
}
mean_accuracy() { awk 'NF {s += $1; n++; v = v " " $1} END {if (n) printf "%.2f%% (%s)", s / n, substr(v, 2); else printf "n/a"}'; }
PT=("$P" bench/pytorch_reference.py)
WRN=(--model wrn --device cuda --batch-size 256)
MNIST=(--model mnist-cnn --device cuda --batch-size 64 --optimizer adadelta --lr 1.0)
WRN_DATA=synthetic:3x32x32:100:25600:1000
MNIST_DATA=synthetic:1x28x28:10:64000:1000
# Time to 91% Fashion-MNIST test accuracy with the MNIST guide's schedule (after MNIST's options).
TTA=(--data "fashion-mnist:$data" --scheduler step --gamma 0.7 --epochs 14 --target-accuracy 0.91)

if part one-gpu; then
  say "== one GPU: scalebench and PyTorch eager, side by side"
  run sb-wrn-bf16 900 "$S" train "${WRN[@]}" --data "$WRN_DATA" --precision bf16 --layout nhwc --epochs 3 --out "$R/sb-wrn-bf16.h5"
  run pt-wrn-bf16 900 "${PT[@]}" --model wrn --precision bf16 --channels-last --steps 60 --warmup 15 --json "$R/pt-wrn-bf16.json"
  run sb-wrn-tf32 900 "$S" train "${WRN[@]}" --data synthetic:3x32x32:100:12800:1000 --precision tf32 --layout nchw --epochs 2 --out "$R/sb-wrn-tf32.h5"
  run pt-wrn-fp32 900 "${PT[@]}" --model wrn --precision fp32 --steps 40 --warmup 10 --json "$R/pt-wrn-fp32.json"
  run sb-wrn-tf32-nhwc 900 "$S" train "${WRN[@]}" --data "$WRN_DATA" --precision tf32 --layout nhwc --epochs 2 --out "$R/sb-wrn-tf32-nhwc.h5"
  run sb-mnist-fp32 600 "$S" train "${MNIST[@]}" --data "$MNIST_DATA" --precision fp32 --epochs 3 --out "$R/sb-mnist-fp32.h5"
  run sb-mnist-tf32 600 "$S" train "${MNIST[@]}" --data "$MNIST_DATA" --precision tf32 --epochs 3 --out "$R/sb-mnist-tf32.h5"
  run pt-mnist-fp32 600 "${PT[@]}" --model mnist-cnn --batch-size 64 --json "$R/pt-mnist-fp32.json"
fi
if part compile; then
  say "== one GPU: PyTorch torch.compile"
  run pt-wrn-bf16-compile 1800 "${PT[@]}" --model wrn --precision bf16 --channels-last --compile --steps 60 --warmup 15 --json "$R/pt-wrn-bf16-compile.json"
  run pt-mnist-fp32-compile 1800 "${PT[@]}" --model mnist-cnn --batch-size 64 --compile --compile-mode reduce-overhead --json "$R/pt-mnist-fp32-compile.json"
fi
if part tta; then
  say "== one GPU: time to 91% Fashion-MNIST test accuracy (batch 64, Adadelta lr 1.0, StepLR 0.7)"
  for p in fp32 tf32; do
    run "sb-tta-$p" 600 "$S" train "${MNIST[@]}" "${TTA[@]}" --precision $p --out "$R/sb-tta-$p.h5"
  done
  run pt-tta 600 "${PT[@]}" --time-to-accuracy "$data" --json "$R/pt-tta.json"
fi
# steady NAME...: the median of the steady epochs (all but the first) of each named log, and of them all.
steady() { steady_from 2 "$@"; }
# steady_from FIRST NAME...: the same over the epochs from FIRST on.
steady_from() {
  local first=$1 name all=() rates=()
  shift
  for name in "$@"; do
    mapfile -t rates < <(grep '^epoch' "$R/$name.log" | tail -n +"$first" | grep -oE '[0-9,]+ img/s' | tr -d ', img/s')
    all+=("${rates[@]}")
  done
  printf '%s\n' "${all[@]}" | sort -n | awk '{v[NR] = $1} END {if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2), "img/s median of", NR, "steady epochs, spread", v[1], "-", v[NR]}'
}
# pytorch_median NAME...: the median of the runs' median step rates (pytorch_reference.py's JSON).
pytorch_median() {
  local name
  for name in "$@"; do "$P" -c 'import json, sys; print(json.load(open(sys.argv[1]))["images_per_s"])' "$R/$name.json"; done |
    sort -n | awk '{v[NR] = $1} END {if (NR) printf "%.0f\n", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (a > 0 && b > 0) printf "%.3fx", a / b; else print "n/a"}'; }
if part plans; then
  say "== one GPU: the first epoch of the wrn with an empty plan cache, a warm one, and --autotune off"
  for name in cold warm; do
    run "sb-plans-$name" 900 "$S" train "${WRN[@]}" --data "$WRN_DATA" --precision bf16 --layout nhwc --epochs 2 --plan-cache "$R/plans-cold"
  done
  run sb-plans-cold-no-autotune 900 "$S" train "${WRN[@]}" --data "$WRN_DATA" --precision bf16 --layout nhwc --epochs 2 \
      --plan-cache "$R/plans-no-autotune" --autotune off
  for name in cold warm cold-no-autotune; do
    say "first epoch, $name: $(grep -m1 '^epoch' "$R/sb-plans-$name.log" | awk '{print $4}') s; steady $(grep '^epoch' "$R/sb-plans-$name.log" | tail -1 | awk '{print $4}') s"
  done
fi
if part learning; then
  say "== one GPU: learning on Fashion-MNIST as CIFAR-100, scalebench against PyTorch, 3 seeds per recipe"
  cifar=$R/fashion-mnist-as-cifar100
  "$P" bench/fashion_mnist_as_cifar100.py "$data" "$cifar" > "$R/fashion-as-cifar.log" 2>&1 ||
    say "fashion_mnist_as_cifar100.py failed (see $R/fashion-as-cifar.log)"
  for recipe in "guide 256 0.01 0" "fast 128 0.05 0.9"; do
    read -r name batch lr momentum <<< "$recipe"
    for seed in 1 2 3; do
      run "sb-learn-$name-$seed" 600 "$S" train --model wrn --device cuda --data "cifar100:$cifar" --precision bf16 --layout nhwc \
          --epochs 2 --batch-size "$batch" --optimizer sgd --lr "$lr" --momentum "$momentum" --seed "$seed"
      run "pt-learn-$name-$seed" 600 "${PT[@]}" --learn "$cifar" --precision bf16 --channels-last --epochs 2 \
          --batch-size "$batch" --lr "$lr" --momentum "$momentum" --seed "$seed" --json "$R/pt-learn-$name-$seed.json"
    done
    sb_mean=$(last_test_accuracy "sb-learn-$name-1" "sb-learn-$name-2" "sb-learn-$name-3" | mean_accuracy)
    pt_mean=$(json_test_accuracy "$R"/pt-learn-"$name"-[123].json | mean_accuracy)
    say "learning, $name recipe (batch $batch, lr $lr, momentum $momentum): scalebench $sb_mean, PyTorch $pt_mean"
  done
fi
list=$(sb_powers_of_two "$N")
counts=$(tr ',' '\n' <<< "$list" | wc -l)
if part scaling && ((N >= 2)); then
  say "== scaling on $list GPUs: scalebench scale, then PyTorch DDP"
  study() {  # name, options...
    local name=$1
    shift
    run "$name" 1800 "${MPI[@]}" -np "$N" "$S" scale --device cuda --gpus "$list" --repeats 2 --settle-epochs 1 --epochs 2 --out "$R/$name.h5" "$@"
    grep -A"$((2 * counts))" 'images/s' "$R/$name.log" >> "$R/summary.txt"
  }
  study wrn-weak "${WRN[@]}" --data synthetic:3x32x32:100:76800:1000 --precision bf16 --layout nhwc --scaling weak
  study wrn-strong --model wrn --batch-size 1024 --data synthetic:3x32x32:100:76800:1000 --precision bf16 --layout nhwc --scaling strong
  study mnist-weak "${MNIST[@]}" --data synthetic:1x28x28:10:60000:10000 --precision tf32 --scaling weak
  study mnist-strong --model mnist-cnn --batch-size 256 --optimizer adadelta --lr 1.0 --data synthetic:1x28x28:10:60000:10000 --precision tf32 --scaling strong
  for n in ${list//,/ }; do
    run "pt-wrn-$n" 900 "${MPI[@]}" -np "$n" "${PT[@]}" --model wrn --precision bf16 --channels-last --batch-size 256 --steps 50 --warmup 15 \
        --reference-out "$R/pt-wrn-weak.json"
    run "pt-mnist-$n" 900 "${MPI[@]}" -np "$n" "${PT[@]}" --model mnist-cnn --batch-size 64 --steps 200 --warmup 30 \
        --reference-out "$R/pt-mnist-weak.json"
  done
elif part scaling; then
  say "== scaling: skipped, one GPU visible"
fi
if part comm && ((N >= 2)); then
  say "== all-reduce sweep on $N GPUs"
  run comm 900 "${MPI[@]}" -np "$N" "$S" comm --device cuda --dtypes fp32,bf16 --min-bytes 1K --max-bytes 256M --comm-model wrn --out "$R/comm.h5"
  grep -E 'wrn gradients|Avg bus bandwidth|Out of bounds' "$R/comm.log" >> "$R/summary.txt"
elif part comm; then
  say "== comm: skipped, one GPU visible"
fi
# predict_check SCALING LINK DATA SCALE_OPTIONS...: a wrn study under SCALING over LINK, the all-reduce sweep
# (measured once per link and shared by both scalings), then `scalebench predict --check`. Three repeats: the
# model takes each 1-GPU point's median run, and the repeats' spread sets the bar (docs/prediction.md).
predict_check() {
  local scaling=$1 link=$2 study_data=$3 transport=()
  shift 3
  [[ $link == network ]] && transport=(-x NCCL_P2P_DISABLE=1 -x NCCL_SHM_DISABLE=1)
  run "predict-study-$scaling-$link" 900 "${MPI[@]}" "${transport[@]}" -np "$N" "$S" scale "${WRN[@]}" --data "$study_data" \
      --precision bf16 --layout nhwc --scaling "$scaling" --gpus "$list" --repeats 3 --settle-epochs 1 --epochs 2 "$@" \
      --out "$R/predict-study-$scaling-$link.h5"
  [[ -f $R/predict-comm-$link.h5 ]] ||
    run "predict-comm-$link" 600 "${MPI[@]}" "${transport[@]}" -np "$N" "$S" comm --device cuda --comm-model wrn --dtypes fp32 \
        --out "$R/predict-comm-$link.h5"
  run "predict-$scaling-$link" 300 "$S" predict --study "$R/predict-study-$scaling-$link.h5" --comm "$R/predict-comm-$link.h5" \
      --gpus "${list#1,}" --batch-size 256 --check --out "$R/predict-$scaling-$link.h5" --csv "$R/predict-$scaling-$link.csv"
  [[ -f $R/predict-$scaling-$link-check.csv ]] &&
    say "predict --check, $scaling scaling over $link: $(tr '\n' ';' < "$R/predict-$scaling-$link-check.csv")"
}
if part predict && ((N >= 2)); then
  say "== the step model on $list GPUs: a weak wrn study and the all-reduce sweep, then scalebench predict --check"
  # 200 steps an epoch at the largest count (800 on one GPU): slower stretches of a few tens of steps, seen in
  # 2-GPU runs, then fall in every count's epochs alike (docs/prediction.md, "Where it fails").
  for link in ${links//,/ }; do
    predict_check weak "$link" "synthetic:3x32x32:100:$((256 * 200 * N)):1000"
  done
fi
if part predict-strong && ((N >= 2)); then
  say "== the step model on $list GPUs under strong scaling (global batch 256), then scalebench predict --check"
  # The model takes each count's compute from one GPU at that count's per-GPU batch (256 / N).
  per_gpu_batches=$(for n in ${list//,/ }; do echo $((256 / n)); done | sort -n | paste -sd,)
  for link in ${links//,/ }; do
    # 200 steps an epoch at the global batch of 256, on every count.
    predict_check strong "$link" "synthetic:3x32x32:100:$((256 * 200)):1000" --sweep-batch-size "$per_gpu_batches"
  done
fi
if part slow-link && ((N >= 2)); then
  say "== the wrn on $N GPUs over NCCL's network transport, two runs each: scalebench and PyTorch DDP, fp32 and bf16 all-reduce"
  net=(-x NCCL_P2P_DISABLE=1 -x NCCL_SHM_DISABLE=1)
  for r in 1 2; do
    for reduce in fp32 bf16; do
      opt=(); [[ $reduce == bf16 ]] && opt=(--allreduce-bf16)
      run "slow-sb-$reduce-$r" 900 "${MPI[@]}" "${net[@]}" -np "$N" "$S" train "${WRN[@]}" --data "$WRN_DATA" --precision bf16 --layout nhwc \
          --epochs 3 "${opt[@]}" --out "$R/slow-sb-$reduce-$r.h5"
      run "slow-pt-$reduce-$r" 900 "${MPI[@]}" "${net[@]}" -np "$N" "${PT[@]}" --model wrn --precision bf16 --channels-last --batch-size 256 \
          --steps 50 --warmup 15 "${opt[@]}"
    done
  done
  for reduce in fp32 bf16; do
    say "wrn over the network transport, $reduce all-reduce: scalebench $(steady "slow-sb-$reduce-1" "slow-sb-$reduce-2");" \
        "PyTorch DDP $(for r in 1 2; do grep -oE '[0-9,]+ images/s' "$R/slow-pt-$reduce-$r.log" | head -1 | tr -d ','; done | cut -d' ' -f1 | paste -sd/) images/s"
  done
fi
if part bars; then
  say "== one GPU: the bars' ratios, two runs of each program, alternating"
  for run_no in 1 2; do
    run "bars-sb-wrn-bf16-$run_no" 900 "$S" train "${WRN[@]}" --data "$WRN_DATA" --precision bf16 --layout nhwc --epochs 3 \
        --plan-cache "$R/bars-plans-wrn" --out "$R/bars-sb-wrn-bf16-$run_no.h5"
    run "bars-pt-wrn-bf16-compile-$run_no" 1800 "${PT[@]}" --model wrn --precision bf16 --channels-last --compile --steps 60 \
        --warmup 15 --json "$R/bars-pt-wrn-bf16-compile-$run_no.json"
    for p in tf32 fp32; do
      run "bars-sb-mnist-$p-$run_no" 600 "$S" train "${MNIST[@]}" --data "$MNIST_DATA" --precision $p --layout nhwc --epochs 3 \
          --plan-cache "$R/bars-plans-mnist" --out "$R/bars-sb-mnist-$p-$run_no.h5"
    done
    run "bars-pt-mnist-compile-$run_no" 1800 "${PT[@]}" --model mnist-cnn --batch-size 64 --compile --compile-mode reduce-overhead \
        --json "$R/bars-pt-mnist-compile-$run_no.json"
  done
  wrn=$(steady bars-sb-wrn-bf16-1 bars-sb-wrn-bf16-2)
  wrn_pt=$(pytorch_median bars-pt-wrn-bf16-compile-1 bars-pt-wrn-bf16-compile-2)
  say "bars: wrn bf16 scalebench $wrn; torch.compile $wrn_pt img/s; ratio $(ratio "${wrn%% *}" "$wrn_pt")"
  mnist_pt=$(pytorch_median bars-pt-mnist-compile-1 bars-pt-mnist-compile-2)
  for p in tf32 fp32; do
    rate=$(steady "bars-sb-mnist-$p-1" "bars-sb-mnist-$p-2")
    say "bars: mnist-cnn $p scalebench $rate; torch.compile reduce-overhead $mnist_pt img/s; ratio $(ratio "${rate%% *}" "$mnist_pt")"
  done
fi
if part max-autotune; then
  say "== one GPU: the wrn bf16 against torch.compile in its default and max-autotune modes, two runs each, alternating"
  for run_no in 1 2; do
    run "ma-sb-wrn-bf16-$run_no" 900 "$S" train "${WRN[@]}" --data "$WRN_DATA" --precision bf16 --layout nhwc --epochs 3 \
        --plan-cache "$R/ma-plans-wrn" --out "$R/ma-sb-wrn-bf16-$run_no.h5"
    for mode in default max-autotune; do
      run "ma-pt-wrn-bf16-$mode-$run_no" 1800 "${PT[@]}" --model wrn --precision bf16 --channels-last --compile \
          --compile-mode "$mode" --steps 60 --warmup 15 --json "$R/ma-pt-wrn-bf16-$mode-$run_no.json"
    done
  done
  wrn=$(steady ma-sb-wrn-bf16-1 ma-sb-wrn-bf16-2)
  default_pt=$(pytorch_median ma-pt-wrn-bf16-default-1 ma-pt-wrn-bf16-default-2)
  autotuned_pt=$(pytorch_median ma-pt-wrn-bf16-max-autotune-1 ma-pt-wrn-bf16-max-autotune-2)
  say "max-autotune: wrn bf16 scalebench $wrn; torch.compile default $default_pt img/s (ratio $(ratio "${wrn%% *}" "$default_pt")), max-autotune $autotuned_pt img/s (ratio $(ratio "${wrn%% *}" "$autotuned_pt"))"
fi
if part dp; then
  say "== nn.DataParallel against DDP on 1, 2 and 4 GPUs (up to $N), two runs each: scalebench, then PyTorch"
  for n in 1 2 4; do
    ((n <= N)) || continue
    for r in 1 2; do
      run "sb-dp-mnist-$n-$r" 900 "$S" train "${MNIST[@]}" --data "$MNIST_DATA" --precision tf32 --epochs 3 --parallel dp --replicas "$n"
      run "sb-ddp-mnist-$n-$r" 900 "${MPI[@]}" -np "$n" "$S" train "${MNIST[@]}" --data "$MNIST_DATA" --precision tf32 --epochs 3
      run "sb-dp-wrn-$n-$r" 900 "$S" train "${WRN[@]}" --data "$WRN_DATA" --precision bf16 --layout nhwc --epochs 3 --parallel dp --replicas "$n"
      run "sb-ddp-wrn-$n-$r" 900 "${MPI[@]}" -np "$n" "$S" train "${WRN[@]}" --data "$WRN_DATA" --precision bf16 --layout nhwc --epochs 3
      run "pt-dp-mnist-$n-$r" 900 "${PT[@]}" --model mnist-cnn --batch-size 64 --dp "$n" --steps 200 --warmup 30
      run "pt-ddp-mnist-$n-$r" 900 "${MPI[@]}" -np "$n" "${PT[@]}" --model mnist-cnn --batch-size 64 --steps 200 --warmup 30
      run "pt-dp-wrn-$n-$r" 900 "${PT[@]}" --model wrn --precision bf16 --channels-last --batch-size 256 --dp "$n" --steps 50 --warmup 15
      run "pt-ddp-wrn-$n-$r" 900 "${MPI[@]}" -np "$n" "${PT[@]}" --model wrn --precision bf16 --channels-last --batch-size 256 --steps 50 --warmup 15
    done
  done
  pytorch_rates() {  # the images/s of each named PyTorch log
    local name
    for name in "$@"; do grep -oE '[0-9,]+ images/s' "$R/$name.log" | head -1 | tr -d ',' | cut -d' ' -f1; done | paste -sd/
  }
  for n in 1 2 4; do
    ((n <= N)) || continue
    for m in mnist wrn; do
      say "$m on $n GPU(s): scalebench dp $(steady "sb-dp-$m-$n-1" "sb-dp-$m-$n-2"); ddp $(steady "sb-ddp-$m-$n-1" "sb-ddp-$m-$n-2");" \
          "PyTorch dp $(pytorch_rates "pt-dp-$m-$n-1" "pt-dp-$m-$n-2") images/s, ddp $(pytorch_rates "pt-ddp-$m-$n-1" "pt-ddp-$m-$n-2") images/s"
    done
  done
fi
if part cards; then
  say "== the wrn on each of the $N GPUs alone, then on all of them: 300 steps a rank an epoch, 4 epochs each"
  # The job's data set grows with the ranks, so that each rank runs as many steps an epoch as a card alone.
  cards_run() {  # NAME RANKS IMAGES [mpirun options...]
    local name=$1 ranks=$2 images=$3
    shift 3
    run "$name" 600 "${MPI[@]}" "$@" -np "$ranks" "$S" train "${WRN[@]}" --data "synthetic:3x32x32:100:$images:1000" \
      --precision bf16 --layout nhwc --epochs 4 --plan-cache "$R/plan-cache" --out "$R/$name.h5"
  }
  clocks_of() { grep -h '^GPU clocks' "$R/$1.log" | sed 's/^GPU clocks in the last epoch: //'; }
  efficiency() { awk -v job="$1" -v card="$2" -v n="$3" 'BEGIN {if (job > 0 && card > 0) printf "%.1f%%", 100 * job / (n * card); else print "n/a"}'; }
  cards_run cards-warm-up 1 25600 -x CUDA_VISIBLE_DEVICES=0  # builds the plan cache, so that no card alone searches
  alone=()
  for ((g = 0; g < N; ++g)); do
    CUDA_VISIBLE_DEVICES=$g cards_run "cards-gpu$g" 1 76800 -x CUDA_VISIBLE_DEVICES
    median_line=$(steady "cards-gpu$g")
    alone[g]=${median_line%% *}
    say "GPU $g alone: $median_line; $(clocks_of "cards-gpu$g")"
  done
  if ((N > 1)); then
    cards_run cards-job "$N" $((76800 * N))
    median_line=$(steady cards-job)
    job=${median_line%% *}
    slowest=$(printf '%s\n' "${alone[@]}" | sort -n | head -1)
    say "all $N GPUs: $median_line; $(clocks_of cards-job); weak-scaling efficiency $(efficiency "$job" "${alone[0]}" "$N")" \
        "against GPU 0 alone, $(efficiency "$job" "$slowest" "$N") against the slowest card alone"
  fi
fi
# image_folder PATH NAME OPTIONS...: an ImageNet-like JPEG folder (scripts/make_image_data.py imagenet-like
# OPTIONS), written the first time (into a temporary name, so that an interrupted write is never taken for the
# folder; its log is NAME.log), then reused.
image_folder() {
  local path=$1 name=$2
  shift 2
  [[ -d $path/train ]] && return 0
  say "writing the JPEG folder $path (scripts/make_image_data.py, once)"
  mkdir -p "$(dirname "$path")" && rm -rf "$path.partial"
  printf '*\n' > "$(dirname "$path")/.gitignore"  # gigabytes of JPEGs, never to be committed
  run "$name" 1800 "$P" scripts/make_image_data.py imagenet-like "$path.partial" "$@"
  if [[ -d $path.partial/train ]] && grep -q ' images, ' "$R/$name.log"; then
    mv "$path.partial" "$path"
  else
    say "no JPEG folder (see $R/$name.log)"
    return 1
  fi
}
# The folder of the io and files parts; the one of learning-images (100 classes, 31,000 images).
jpeg_folder_path=$out_root/image-data/imagenet-like-1000x11
jpeg_folder() { image_folder "$jpeg_folder_path" jpeg-folder --classes 1000 --train-per-class 11 --val-per-class 1; }
learning_folder_path=$out_root/image-data/imagenet-like-100x260
learning_folder() {
  image_folder "$learning_folder_path" learning-folder --classes 100 --train-per-class 260 --val-per-class 50
}
if part io && jpeg_folder; then
  say "== the input pipeline alone on GPU 0, two runs of each program, alternating: CPU and GPU decoding, 1-15 workers"
  mkdir -p "$R/io"
  IO=(--data "imagefolder:$jpeg_folder_path" --decode "cpu,gpu" --workers "1,2,3,4,8,15" --batch-size 256 --batches 40)
  for r in 1 2; do
    run "io/sb-io-$r" 900 "$S" io "${IO[@]}" --out "$R/io/sb-io-$r.csv"
    run "io/pt-io-$r" 900 "${PT[@]}" --io "${IO[@]}" --csv "$R/io/pt-io-$r.csv" --json "$R/io/pt-io-$r.json"
  done
  "$P" bench/io_table.py "$R/io" > "$R/io/table.txt" 2>&1 || failed=$((failed + 1))
  tee -a "$R/summary.txt" < "$R/io/table.txt"
fi
if part files && jpeg_folder; then
  say "== resnet50 from the JPEG folder on GPU 0, two runs each: scalebench GPU and CPU decoding and synthetic data," \
      "torch.compile with a DataLoader, nvJPEG and synthetic data"
  mkdir -p "$R/files"
  # 40 steps an epoch; the first epoch (plans, compilation, workers starting) is left out of each median.
  SB_RESNET=(--model resnet50 --device cuda --batch-size 256 --precision bf16 --layout nhwc --epochs 3 --train-limit 10240
             --plan-cache "$R/files/plans")
  PT_RESNET=(--model resnet50 --batch-size 256 --precision bf16 --channels-last --compile)
  # scalebench's runs first: the bar (files against synthetic data) is theirs; PyTorch's, compiled each time, follow.
  for r in 1 2; do
    run "files/sb-gpu-$r" 900 "$S" train "${SB_RESNET[@]}" --data "imagefolder:$jpeg_folder_path" --decode gpu --workers 4 --out "$R/files/sb-gpu-$r.h5"
    run "files/sb-cpu-$r" 900 "$S" train "${SB_RESNET[@]}" --data "imagefolder:$jpeg_folder_path" --decode cpu --workers 15 \
        --out "$R/files/sb-cpu-$r.h5"
    run "files/sb-synthetic-$r" 900 "$S" train "${SB_RESNET[@]}" --data synthetic:3x224x224:1000:10240:1000 \
        --out "$R/files/sb-synthetic-$r.h5"
  done
  for r in 1 2; do
    for decode in gpu cpu; do
      run "files/pt-$decode-$r" 1800 "${PT[@]}" "${PT_RESNET[@]}" --data "imagefolder:$jpeg_folder_path" --decode "$decode" --workers 15 \
          --epochs 3 --train-limit 10240 --json "$R/files/pt-$decode-$r.json"
    done
    run "files/pt-synthetic-$r" 1800 "${PT[@]}" "${PT_RESNET[@]}" --steps 60 --warmup 15 --json "$R/files/pt-synthetic-$r.json"
  done
  for kind in gpu cpu synthetic; do
    rate=$(steady "files/sb-$kind-1" "files/sb-$kind-2")
    rate_pt=$(pytorch_median "files/pt-$kind-1" "files/pt-$kind-2")
    say "files, resnet50, $kind: scalebench $rate; torch.compile $rate_pt img/s; ratio $(ratio "${rate%% *}" "$rate_pt")"
    [[ $kind == synthetic ]] || say "  PyTorch, $kind decode: $(grep -h '^waited' "$R/files/pt-$kind-1.log" "$R/files/pt-$kind-2.log" | paste -sd';')"
  done
fi

if part resnets && jpeg_folder; then
  say "== one GPU: ResNet-50 against torch.compile in fp16 and bf16, its peak memory, ResNet-50 and ResNet-18 trained" \
      "from the JPEG folder against synthetic data; two runs of each program, alternating"
  mkdir -p "$R/resnets"
  # 40 steps an epoch, the first epoch (plans, graph capture, workers starting) left out of each median.
  R50=(--model resnet50 --device cuda --batch-size 256 --layout nhwc --plan-cache "$R/resnets/plans-resnet50")
  R18=(--model resnet18 --device cuda --batch-size 256 --precision bf16 --layout nhwc --epochs 8
       --plan-cache "$R/resnets/plans-resnet18")
  PT50=(--model resnet50 --batch-size 256 --channels-last --compile --steps 40 --warmup 12)
  # `time` of the whole process, for the cores the input pipeline keeps busy ((user + sys) / wall).
  TIMED=(bash -c 'TIMEFORMAT="wall %R s user %U s sys %S s"; time "$@"' timed)
  for r in 1 2; do
    for p in fp16 bf16; do
      run "resnets/sb-resnet50-$p-$r" 900 "$S" train "${R50[@]}" --precision $p --epochs 3 \
          --data synthetic:3x224x224:1000:10240:1000 --out "$R/resnets/sb-resnet50-$p-$r.h5"
      run "resnets/pt-resnet50-$p-compile-$r" 1800 "${PT[@]}" "${PT50[@]}" --precision $p \
          --json "$R/resnets/pt-resnet50-$p-compile-$r.json"
    done
    run "resnets/sb-resnet50-files-$r" 900 "${TIMED[@]}" "$S" train "${R50[@]}" --precision fp16 --epochs 3 --train-limit 10240 \
        --data "imagefolder:$jpeg_folder_path" --decode gpu --workers 3 --out "$R/resnets/sb-resnet50-files-$r.h5"
    run "resnets/sb-resnet18-files-$r" 900 "$S" train "${R18[@]}" --data "imagefolder:$jpeg_folder_path" --decode gpu \
        --out "$R/resnets/sb-resnet18-files-$r.h5"
    run "resnets/sb-resnet18-synthetic-$r" 900 "$S" train "${R18[@]}" --data synthetic:3x224x224:1000:11000:1000 \
        --out "$R/resnets/sb-resnet18-synthetic-$r.h5"
  done
  # PyTorch's reference cycles through 4 batches on the device; scalebench holds the same 4 here, and one test
  # image, the least --data takes.
  run resnets/sb-resnet50-memory 900 "$S" train "${R50[@]}" --precision fp16 --epochs 2 \
      --data synthetic:3x224x224:1000:1024:1 --out "$R/resnets/sb-resnet50-memory.h5"
  # Each model's fp16 step by kind of work (kernel_trace_summary.py --groups), where the kernel timeline library
  # was built (it needs CUPTI): staged, or in the binary's build folder.
  trace_lib=
  for candidate in "$STAGE/lib/libkernel_trace.so" "$(dirname "$S")/bench/libkernel_trace.so"; do
    [[ -f $candidate ]] && { trace_lib=$candidate; break; }
  done
  for m in resnet50 resnet18; do
    [[ -n $trace_lib ]] || { say "resnets: no libkernel_trace.so, so no step split by kind of work"; break; }
    images=5120; [[ $m == resnet18 ]] && images=15360  # the last epoch longer than the 300 ms window
    run "resnets/sb-$m-fp16-trace" 900 env CUDA_INJECTION64_PATH="$trace_lib" SCALEBENCH_KERNEL_TRACE="$R/resnets/$m.csv" \
        "$S" train --model $m --device cuda --batch-size 256 --precision fp16 --layout nhwc --epochs 3 \
        --plan-cache "$R/resnets/plans-$m" --data "synthetic:3x224x224:1000:$images:1000" --out "$R/resnets/sb-$m-fp16-trace.h5"
    "$report_python" bench/kernel_trace_summary.py "$R/resnets/$m.csv" --last-ms 300 --skip-ms 40 --top 150 --groups \
        > "$R/resnets/kernel-trace-$m-fp16.txt" 2>&1
    rm -f "$R/resnets/$m.csv"  # tens of MB; the summary is what is read
    say "resnets: $m fp16 step by kind of work (us): $(sed -n '/^by kind/,$p' "$R/resnets/kernel-trace-$m-fp16.txt" |
        awk 'NR > 2 && $1 ~ /^[0-9.]+$/ {t = $1; $1 = $2 = ""; sub(/^ +/, ""); printf "%s%s %s", (n++ ? "; " : ""), t, $0}')"
  done
  declare -A r50_synthetic
  for p in fp16 bf16; do
    r50_synthetic[$p]=$(steady "resnets/sb-resnet50-$p-1" "resnets/sb-resnet50-$p-2")
    rate_pt=$(pytorch_median "resnets/pt-resnet50-$p-compile-1" "resnets/pt-resnet50-$p-compile-2")
    say "resnets: resnet50 $p scalebench ${r50_synthetic[$p]}; torch.compile $p $rate_pt img/s;" \
        "ratio $(ratio "${r50_synthetic[$p]%% *}" "$rate_pt")"
  done
  r50_files=$(steady resnets/sb-resnet50-files-1 resnets/sb-resnet50-files-2)
  # TIMED's line: "wall W s user U s sys S s".
  say "resnets: resnet50 fp16 from the files, 3 workers: $r50_files; of synthetic fp16" \
      "$(ratio "${r50_files%% *}" "${r50_synthetic[fp16]%% *}");" \
      "cores busy $(grep -h '^wall' "$R"/resnets/sb-resnet50-files-[12].log | awk '{printf "%s%.1f", (NR > 1 ? ", " : ""), ($5 + $8) / $2}')"
  # resnet18's rate from the files still climbs through the first epochs: the last four are its steady ones.
  r18_files=$(steady_from 5 resnets/sb-resnet18-files-1 resnets/sb-resnet18-files-2)
  r18_synthetic=$(steady_from 5 resnets/sb-resnet18-synthetic-1 resnets/sb-resnet18-synthetic-2)
  say "resnets: resnet18 bf16 epochs 5-8, from the files $r18_files; synthetic $r18_synthetic;" \
      "ratio $(ratio "${r18_files%% *}" "${r18_synthetic%% *}")"
  sb_memory=$(grep -oE 'at most [0-9.]+ GiB allocated' "$R/resnets/sb-resnet50-memory.log" | grep -oE '[0-9.]+')
  pt_memory=$("$P" -c 'import json, sys; print("%.2f" % (json.load(open(sys.argv[1]))["max_memory_allocated_bytes"] / 2**30))' \
      "$R/resnets/pt-resnet50-fp16-compile-1.json" 2>/dev/null)
  say "resnets: resnet50 fp16 peak memory with 4 batches on the device: scalebench ${sb_memory:-n/a} GiB, PyTorch" \
      "max_memory_allocated ${pt_memory:-n/a} GiB; ratio $(ratio "${sb_memory:-0}" "${pt_memory:-0}")"
fi

if part learning-images && learning_folder; then
  say "== one GPU: resnet18 for 8 epochs at the reference recipe on the generated folder, scalebench against" \
      "PyTorch, seeds 1-2 alternating"
  for seed in 1 2; do
    run "sb-learn-images-$seed" 900 "$S" train --model resnet18 --device cuda --data "imagefolder:$learning_folder_path" \
        --decode gpu --precision bf16 --layout nhwc --epochs 8 --seed "$seed" --out "$R/sb-learn-images-$seed.h5"
    run "pt-learn-images-$seed" 1800 "${PT[@]}" --learn "imagefolder:$learning_folder_path" --model resnet18 --precision bf16 \
        --channels-last --epochs 8 --workers 15 --seed "$seed" --json "$R/pt-learn-images-$seed.json"
    # fp16, scalebench's faster precision on these models, must learn as bf16 does.
    run "sb-learn-images-fp16-$seed" 900 "$S" train --model resnet18 --device cuda --data "imagefolder:$learning_folder_path" \
        --decode gpu --precision fp16 --layout nhwc --epochs 8 --seed "$seed" --out "$R/sb-learn-images-fp16-$seed.h5"
  done
  say "learning-images, resnet18, test accuracy after 8 epochs:" \
      "scalebench $(last_test_accuracy sb-learn-images-1 sb-learn-images-2 | mean_accuracy)," \
      "PyTorch $(json_test_accuracy "$R"/pt-learn-images-[12].json | mean_accuracy)," \
      "scalebench fp16 $(last_test_accuracy sb-learn-images-fp16-1 sb-learn-images-fp16-2 | mean_accuracy)"
fi

# The reports: one per group, of the files that exist, each naming its files relative to the run's folder.
report() {  # folder, title, results files and PyTorch's .json files...
  local dir=$1 title=$2 args=() f runs=0
  shift 2
  for f in "$@"; do
    [[ -e $R/$f ]] || continue
    if [[ $f == *.json ]]; then args+=(--reference "$f"); else args+=("$f"); runs=$((runs + 1)); fi
  done
  ((runs > 0)) || return 0
  (cd "$R" && "$report_python" "$root/analysis/report.py" "${args[@]}" --title "$title" --out "$dir") > "$R/$dir.log" 2>&1 ||
    { failed=$((failed + 1)); say "report $dir failed (see $R/$dir.log)"; }
}
root=$PWD
gpu_label="$N x ${model:-GPU}"
if ((make_report)); then
  report report-one-gpu "One GPU against PyTorch, ${model:-GPU}" sb-wrn-bf16.h5 sb-wrn-tf32.h5 sb-wrn-tf32-nhwc.h5 \
      sb-mnist-fp32.h5 sb-mnist-tf32.h5 pt-wrn-bf16.json pt-wrn-fp32.json pt-mnist-fp32.json pt-wrn-bf16-compile.json \
      pt-mnist-fp32-compile.json
  report report-tta "Time to 91% Fashion-MNIST accuracy, ${model:-GPU}" sb-tta-fp32.h5 sb-tta-tf32.h5
  report report-wrn "wrn scaling, $gpu_label" wrn-weak.h5 wrn-strong.h5 pt-wrn-weak.json
  report report-mnist "mnist-cnn scaling, $gpu_label" mnist-weak.h5 mnist-strong.h5 pt-mnist-weak.json
else
  say "no report: '$report_python' lacks h5py or matplotlib; on a machine with both, run for each group, e.g."
  say "  (cd $R && python3 $PWD/analysis/report.py wrn-weak.h5 wrn-strong.h5 --reference pt-wrn-weak.json --out report-wrn)"
fi
kill $telemetry_pid 2>/dev/null
"$report_python" bench/telemetry_summary.py "$R" > "$R/telemetry.txt" 2>&1 || say "telemetry_summary.py failed (see $R/telemetry.txt)"
say "done: $failed command(s) failed; results in $R"
((failed == 0))

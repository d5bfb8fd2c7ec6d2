#!/usr/bin/env bash
# Fuzzes the readers of hostile input (IDX, CIFAR, checkpoints, the plan cache, the data cache, the peak-rate
# cache) with libFuzzer for a bounded time.
#
#   tests/fuzz/run_fuzzers.sh [SECONDS [SCALEBENCH]]
#
# SECONDS     how long each target fuzzes (default 60); the targets run side by side, each as one process
#             (FUZZ_JOBS at a time, default all), so the whole run takes about SECONDS.
# SCALEBENCH  the built scalebench binary (default build/scalebench), which writes a real checkpoint for
#             the checkpoint target's seed corpus; without it the script warns and uses only the small
#             checkpoints it writes itself with sb::save_checkpoint.
#
# Installs clang and libFuzzer (Debian: clang-14, libclang-rt-14-dev) when missing and it runs as root,
# builds tests/fuzz into build-fuzz/ (FUZZ_BUILD_DIR overrides), writes the seed corpora, replays the
# stored regression inputs (tests/fuzz/regressions/), then fuzzes each target. Exits 1 on any finding
# (a crash, a sanitizer report, a leak, an uncaught exception, a timeout, an allocation over the limit),
# printing the reproducer and the command that replays it. docs/fuzzing.md explains what is fuzzed.
set -euo pipefail

SECONDS_EACH=${1:-60}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SCALEBENCH=${2:-$ROOT/build/scalebench}
[[ $SCALEBENCH == /* ]] || SCALEBENCH=$PWD/$SCALEBENCH  # relative to where the script was called from
BUILD=${FUZZ_BUILD_DIR:-$ROOT/build-fuzz}
TARGETS=(fuzz_idx_reader fuzz_cifar_reader fuzz_checkpoint_reader fuzz_checkpoint_fields fuzz_plan_store_reader
         fuzz_data_cache_reader fuzz_peak_rate_reader fuzz_jpeg_decode fuzz_png_decode fuzz_tar_reader)
# libFuzzer limits: a finding is anything beyond them.
LIMITS=(-rss_limit_mb=2048 -malloc_limit_mb=1024 -timeout=10)

if ! [[ $SECONDS_EACH =~ ^[0-9]+$ ]] || ((SECONDS_EACH < 1)); then
  echo "usage: $0 [SECONDS [SCALEBENCH]]  (SECONDS: a whole number >= 1, got '$SECONDS_EACH')" >&2
  exit 2
fi
cd "$ROOT"
say() { printf 'fuzz: %s\n' "$*"; }

# --- clang and libFuzzer --------------------------------------------------------------------------
CXX=${FUZZ_CXX:-clang++}
CC=${FUZZ_CC:-clang}
probe_libfuzzer() {
  local dir
  dir=$(mktemp -d)
  printf '%s\n' '#include <cstddef>' '#include <cstdint>' \
    'extern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }' >"$dir/probe.cpp"
  "$CXX" -fsanitize=fuzzer,address,undefined "$dir/probe.cpp" -o "$dir/probe" >/dev/null 2>&1
  local rc=$?
  rm -rf "$dir"
  return $rc
}
if ! command -v "$CXX" >/dev/null 2>&1 || ! probe_libfuzzer; then
  if [[ $(id -u) -ne 0 ]]; then
    echo "fuzz: $CXX with libFuzzer is missing; as root: apt-get install -y clang-14 libclang-rt-14-dev llvm-14" >&2
    exit 1
  fi
  say "installing clang and libFuzzer (clang-14, libclang-rt-14-dev, llvm-14)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq clang-14 libclang-rt-14-dev llvm-14 >/dev/null
  if ! command -v "$CXX" >/dev/null 2>&1; then CXX=clang++-14 CC=clang-14; fi
  probe_libfuzzer || { echo "fuzz: $CXX still can't link -fsanitize=fuzzer" >&2; exit 1; }
fi
# Symbolized stack traces in the reports.
for s in llvm-symbolizer llvm-symbolizer-14 /usr/lib/llvm-14/bin/llvm-symbolizer; do
  if command -v "$s" >/dev/null 2>&1; then
    ASAN_SYMBOLIZER_PATH=$(command -v "$s")
    export ASAN_SYMBOLIZER_PATH
    break
  fi
done
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# --- build ----------------------------------------------------------------------------------------
say "building the fuzz targets in $BUILD ($("$CXX" --version | head -n 1))"
cmake -S tests/fuzz -B "$BUILD" -DCMAKE_CXX_COMPILER="$CXX" -DCMAKE_C_COMPILER="$CC" >"$BUILD.configure.log" 2>&1 ||
  { cat "$BUILD.configure.log" >&2; exit 1; }
mv "$BUILD.configure.log" "$BUILD/configure.log"
cmake --build "$BUILD" -j "$(nproc 2>/dev/null || echo 2)" >"$BUILD/build.log" 2>&1 ||
  { tail -n 60 "$BUILD/build.log" >&2; exit 1; }

# --- seed corpora ---------------------------------------------------------------------------------
SEEDS=$BUILD/seeds
rm -rf "$SEEDS"
mkdir -p "$SEEDS"
"$BUILD/make_seeds" "$SEEDS"
"$BUILD/make_checkpoint_seed" "$SEEDS/fuzz_checkpoint_reader"
"$BUILD/make_plan_store_seed" "$SEEDS/fuzz_plan_store_reader"
"$BUILD/make_data_cache_seed" "$SEEDS/fuzz_data_cache_reader"
"$BUILD/make_peak_rate_seed" "$SEEDS/fuzz_peak_rate_reader"
"$BUILD/make_image_seeds" "$SEEDS"
if [[ -x $SCALEBENCH ]]; then
  work=$(mktemp -d)
  if (cd "$work" && "$SCALEBENCH" train --model mlp --data synthetic:1x4x4:2:16:8 --epochs 1 --checkpoint-every 1 \
        --checkpoint seed.ckpt.h5 >run.log 2>&1); then
    cp "$work/seed.ckpt.h5" "$SEEDS/fuzz_checkpoint_reader/scalebench_mlp_epoch1.h5"
  else
    echo "fuzz: warning: $SCALEBENCH did not write a checkpoint; the checkpoint corpus has only generated seeds:" >&2
    tail -n 5 "$work/run.log" >&2
  fi
  rm -rf "$work"
else
  echo "fuzz: warning: $SCALEBENCH not found (build it with make, or pass its path); the checkpoint corpus has only generated seeds" >&2
fi
for t in "${TARGETS[@]}"; do
  if [[ -d tests/fuzz/regressions/$t ]]; then cp tests/fuzz/regressions/"$t"/* "$SEEDS/$t/" 2>/dev/null || true; fi
done

# Scratch files of the targets (one directory per process) in memory where there is a tmpfs.
if [[ -z ${TMPDIR:-} && -d /dev/shm && -w /dev/shm ]]; then export TMPDIR=/dev/shm; fi

# --- replay and fuzz ------------------------------------------------------------------------------
FINDINGS=$BUILD/findings
LOGS=$BUILD/logs
mkdir -p "$FINDINGS" "$LOGS"
report_finding() {  # target log
  local t=$1 log=$2 f
  echo "fuzz: FINDING in $t; the end of its log ($log):" >&2
  grep -v -E '^#[0-9]+.*(NEW|REDUCE|pulse)' "$log" | tail -n 60 >&2 || true
  for f in "$FINDINGS/$t"-*; do
    [[ -e $f ]] || continue
    echo "fuzz: reproducer: $f" >&2
    echo "fuzz:   replay: $BUILD/$t $f" >&2
  done
}

# One target: the replay of every seed and stored regression input (each must pass: a result or a
# UserError), then SECONDS_EACH of fuzzing. Its summary line goes to LOGS/TARGET.summary and, on a finding,
# its report to LOGS/TARGET.finding.
fuzz_target() {
  local t=$1 log rc runs secs cov
  log=$LOGS/$t.replay.log
  if ! "$BUILD/$t" "${LIMITS[@]}" -artifact_prefix="$FINDINGS/$t-" "$SEEDS/$t"/* >"$log" 2>&1; then
    report_finding "$t" "$log" 2>"$LOGS/$t.finding"
    printf '%-24s replay of %s seeds and regression inputs FAILED\n' "$t" "$(find "$SEEDS/$t" -type f | wc -l)" \
      >"$LOGS/$t.summary"
    return
  fi
  local corpus=$BUILD/corpus/$t
  mkdir -p "$corpus"
  log=$LOGS/$t.log
  local extra=()
  # A real run's checkpoint is 1.1 MB, over libFuzzer's default cap of 1 MiB.
  if [[ $t == fuzz_checkpoint_reader ]]; then extra=(-max_len=2097152); fi
  rc=0
  "$BUILD/$t" "$corpus" "$SEEDS/$t" -max_total_time="$SECONDS_EACH" "${LIMITS[@]}" "${extra[@]}" \
    -artifact_prefix="$FINDINGS/$t-" -print_final_stats=1 >"$log" 2>&1 || rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  secs=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -n 1)
  cov=$(sed -n 's/^#[0-9]*[[:space:]]*DONE .*cov: \([0-9]*\).*ft: \([0-9]*\).*corp: \([0-9]*\).*/cov \1, ft \2, corpus \3/p' "$log" |
    tail -n 1)
  if ((rc != 0)) || compgen -G "$FINDINGS/$t-*" >/dev/null; then
    report_finding "$t" "$log" 2>"$LOGS/$t.finding"
    printf '%-24s FINDING (exit %s) after %s runs\n' "$t" "$rc" "${runs:-?}" >"$LOGS/$t.summary"
  else
    printf '%-24s %4s s  %9s runs  %7s runs/s  %s  no findings\n' "$t" "${secs:-?}" "${runs:-?}" \
      "$(( ${runs:-0} / (${secs:-1} > 0 ? ${secs:-1} : 1) ))" "${cov:-?}" >"$LOGS/$t.summary"
  fi
}

# The targets fuzz side by side (FUZZ_JOBS at a time, default all of them): each is one process, and the
# whole run takes about SECONDS_EACH however many targets there are.
jobs_at_once=${FUZZ_JOBS:-${#TARGETS[@]}}
say "fuzzing ${#TARGETS[@]} targets, $jobs_at_once at a time, ${SECONDS_EACH} s each (logs in $LOGS)"
for t in "${TARGETS[@]}"; do
  rm -f "$LOGS/$t.summary" "$LOGS/$t.finding"
  while (($(jobs -rp | wc -l) >= jobs_at_once)); do wait -n || true; done
  fuzz_target "$t" &
done
wait
failed=()
summary=()
for t in "${TARGETS[@]}"; do
  if [[ -s $LOGS/$t.finding ]]; then
    cat "$LOGS/$t.finding" >&2
    failed+=("$t")
  fi
  summary+=("$(cat "$LOGS/$t.summary" 2>/dev/null || printf '%-24s no summary (the target did not finish)' "$t")")
  [[ -s $LOGS/$t.summary ]] || failed+=("$t")
done

say "summary"
printf '  %s\n' "${summary[@]}"
if ((${#failed[@]})); then
  echo "fuzz: FAILED: findings in ${failed[*]} (reproducers in $FINDINGS; docs/fuzzing.md says how to triage)" >&2
  exit 1
fi
say "no findings"

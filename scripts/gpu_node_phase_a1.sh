#!/usr/bin/env bash
# GPU-node session, part 1 (one GPU): the GPU tests and the PyTorch oracle fixture. Expects .stage/ from scripts/stage_gpu_node.sh and
# writes everything under $OUT (packed into $OUT/phase_a1.tgz).
set -u
R=$OUT/a
# shellcheck source=scripts/gpu_node_env.sh
source "$(dirname "$0")/gpu_node_env.sh"
cat "$R/gpu.txt"
ldd "$S" | grep "not found" && say "MISSING LIBRARIES"

say "== gpu tests"
for t in "$T"/test_*; do
  n=$(basename "$t")
  [[ $n == test_reference_fixture* ]] && continue
  timeout 150 "$t" --gtest_filter='-*Timing*' > "$R/$n.log" 2>&1
  say "$n rc=$? $(grep -E '^\[  (PASSED|FAILED)|tests? ran' "$R/$n.log" | tr '\n' ' ')"
done

say "== oracle fixture"
timeout 240 $P tests/reference/make_fixtures.py --dump-tool "$T/dump_initial_weights" --out "$R/fixtures.h5" > "$R/fixtures.log" 2>&1
say "make_fixtures rc=$?"
export SCALEBENCH_REFERENCE_FIXTURE=$R/fixtures.h5
for t in test_reference_fixture test_reference_fixture_gpu; do
  timeout 120 "$T/$t" > "$R/$t.log" 2>&1
  say "$t rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$R/$t.log" | tr '\n' ' ')"
done

tar czf "$OUT/phase_a1.tgz" -C "$OUT" a
cat "$R/summary.txt"

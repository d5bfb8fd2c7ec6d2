#!/usr/bin/env bash
# GPU-node session: the PyTorch oracle fixture and its tests, then part 2 (throughput side by side and
# time to accuracy). Carry .stage and .stage-data.
set -u
R=$OUT/a3
# shellcheck source=scripts/gpu_node_env.sh
source "$(dirname "$0")/gpu_node_env.sh"
timeout 240 $P tests/reference/make_fixtures.py --dump-tool "$T/dump_initial_weights" --out "$R/fixtures.h5" > "$R/fixtures.log" 2>&1
echo "make_fixtures rc=$?" | tee "$R/summary.txt"
export SCALEBENCH_REFERENCE_FIXTURE=$R/fixtures.h5
for t in test_reference_fixture test_reference_fixture_gpu; do
  timeout 120 "$T/$t" > "$R/$t.log" 2>&1
  echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$R/$t.log" | tr '\n' ' ')" | tee -a "$R/summary.txt"
done
bash scripts/gpu_node_phase_a2.sh > /dev/null 2>&1
mv "$OUT/a2" "$R/run" 2>/dev/null
tar czf "$OUT/phase_a3.tgz" -C "$OUT" a3
cat "$R/summary.txt" "$R/run/summary.txt"

#!/usr/bin/env bash
# GPU-node session: the PyTorch oracle fixture and its tests, then part 2 (throughput side by side and
# time to accuracy). Carry .stage and .stage-data.
set -u
V=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$PWD/.stage/lib:$V/cudnn/lib:$V/nccl/lib:$V/cu13/lib NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
P=/opt/torch/.venv/bin/python3
T=.stage/tests
R=$OUT/a3
mkdir -p "$R"
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

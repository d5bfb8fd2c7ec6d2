"""scalebench's models as its registry lists them (`scalebench info --models`, src/models/registry.cpp):
the one list of names, input shapes, class counts and parameter counts that the PyTorch twin
(sb_torch_models.py) and pytorch_reference.py read. Needs no PyTorch."""
import json
import os
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def scalebench_binary():
    """$SCALEBENCH_BIN, else $SCALEBENCH, else the staged binary, else build/scalebench (as bench/gpu_node.sh)."""
    candidates = (os.environ.get("SCALEBENCH_BIN"), os.environ.get("SCALEBENCH"),
                  os.path.join(REPO, ".stage", "bin", "scalebench"), os.path.join(REPO, "build", "scalebench"))
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise SystemExit("no scalebench binary to list the models: build build/scalebench or set SCALEBENCH_BIN")


def listed_models(binary=None):
    """{name: {"name", "description", "input": [C, H, W], "classes", "parameters", "outputs_log_probabilities"}}
    in the registry's order."""
    # The binary starts MPI on its own (a singleton): it must not take a launcher's variables for its job's.
    # The site's MPI settings (OMPI_MCA_*, e.g. how a singleton starts its daemon) stay.
    env = {k: v for k, v in os.environ.items()
           if k.startswith("OMPI_MCA_") or not k.startswith(("OMPI_", "PMIX_", "PMI_", "SLURM_"))}
    binary = binary or scalebench_binary()
    result = subprocess.run([binary, "info", "--models"], capture_output=True, text=True, env=env, check=False)
    if result.returncode != 0:
        raise SystemExit(f"{binary} info --models failed ({result.returncode}): {result.stderr.strip()}")
    models = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    return {m["name"]: m for m in models}

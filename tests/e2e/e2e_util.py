"""Shared helpers for the end-to-end tests: run scalebench under mpiexec and read its results."""
import json
import os
import subprocess
import tempfile


# The commands that take --device; the tests run them on the CPU unless they name a device themselves,
# since --device defaults to auto (a GPU node would otherwise take its GPU).
DEVICE_COMMANDS = ("train", "scale", "comm")


def with_cpu_device(args):
    """args with --device cpu after the command, unless they choose a device or ask for --help."""
    args = list(args)
    if args and args[0] in DEVICE_COMMANDS and not any(a == "--device" or a.startswith("--device=") or a in ("--help", "-h")
                                                        for a in args):
        return [args[0], "--device", "cpu", *args[1:]]
    return args


def scalebench_command(np, *args):
    mpiexec = os.environ.get("MPIEXEC", "mpirun")
    flags = os.environ.get("MPIEXEC_FLAGS", "--oversubscribe").split()
    return [mpiexec, *flags, "-np", str(np), os.environ["SCALEBENCH"], *with_cpu_device(args)]


def run_scalebench(np, *args, timeout=900):
    """Runs scalebench on np ranks; returns the CompletedProcess (stdout and stderr as text)."""
    return subprocess.run(scalebench_command(np, *args), capture_output=True, text=True, timeout=timeout)


def temp_dir():
    return tempfile.TemporaryDirectory(prefix="scalebench-e2e-")


def recorded_config(path):
    """The run's configuration as the results file records it (the config_json attribute)."""
    import h5py  # only the tests that read results files need it
    with h5py.File(path, "r") as f:
        value = f.attrs["config_json"]
    return json.loads(value.decode() if isinstance(value, bytes) else value)

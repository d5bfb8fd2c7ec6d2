"""The scripts' Python packages (h5py, numpy, matplotlib, PIL) come from Debian's python3-* packages
(scripts/deps.sh). A pyenv or venv python3 that comes first on PATH lacks them: a script then runs itself
again under /usr/bin/python3, rather than fail, and says what to install where that has them neither.
Standard library only: it runs before any of those packages is imported."""
import importlib.util
import os
import sys

SYSTEM_PYTHON = "/usr/bin/python3"
REEXEC_FLAG = "SCALEBENCH_SYSTEM_PYTHON_REEXEC"  # set once, so that a second attempt fails instead of looping


def ensure_packages(prog, script, packages, debian_packages):
    """Returns when every module of `packages` imports here; else re-executes `script` (with the same
    arguments) under /usr/bin/python3, or exits 1 naming the missing modules and `debian_packages`."""
    missing = [name for name in packages if importlib.util.find_spec(name) is None]
    if not missing:
        return
    if (os.path.exists(SYSTEM_PYTHON) and os.path.realpath(sys.executable) != os.path.realpath(SYSTEM_PYTHON)
            and not os.environ.get(REEXEC_FLAG)):
        os.environ[REEXEC_FLAG] = "1"
        os.execv(SYSTEM_PYTHON, [SYSTEM_PYTHON, os.path.abspath(script)] + sys.argv[1:])
    print(f"{prog}: error: the Python packages {', '.join(missing)} are missing from {sys.executable}; install "
          f"{' '.join(debian_packages)} (apt-get, or scripts/deps.sh) and run it with {SYSTEM_PYTHON}.", file=sys.stderr)
    sys.exit(1)

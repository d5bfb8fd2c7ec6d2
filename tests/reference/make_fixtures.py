#!/usr/bin/env python3
"""PyTorch as the oracle: writes tests/reference/fixtures.h5 (README.md here).

For each case (mnist-cnn on 1x28x28, a narrow wrn on 3x32x32, and torchvision's resnet18 and resnet50 on
3x64x64) it
  1. has scalebench write its initial weights for a fixed seed (tests/reference/dump_initial_weights),
  2. loads them by name into the same network in PyTorch (bench/sb_torch_models.py), dropout off and
     batch norm in training mode,
  3. runs one training step on a fixed batch (8 images, 4 for the ResNets; numpy RNG, stored in the
     fixture): forward,
     loss (NLL on log-softmax for mnist-cnn, cross-entropy for wrn), backward, then one SGD step
     (lr 0.1, momentum 0.9) and, separately from the same start, one Adadelta step (lr 1.0),
  4. stores the output, the loss, every gradient, the parameters after each optimizer's step and the
     batch-norm running statistics after the step.

The oracle is PyTorch in float64 on the CPU; results are stored as float32 (their rounding, ~6e-8, is
far below the tests' 1e-5). Where CUDA is available the same step also runs in float32 on the GPU (TF32
off); its distance from the oracle is printed and kept as an attribute, to show what a correct fp32
implementation reaches.

    python3 tests/reference/make_fixtures.py --dump-tool build/tests/reference/dump_initial_weights

Needs torch and numpy, and h5py to write HDF5. Without h5py it writes the same content to a .npz;
convert that on any machine with h5py and numpy (no torch needed):

    python3 tests/reference/make_fixtures.py --from-npz fixtures.npz --out tests/reference/fixtures.h5
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

try:
    import h5py
except ImportError:
    h5py = None

HERE = os.path.dirname(os.path.abspath(__file__))
BATCH = 8
SEED = 1234                # scalebench's initialisation seed
DATA_SEED = 20240611       # numpy RNG of the batch (plus the case's index)
PREFIX_LIMIT = 65536       # elements kept of a larger tensor in params/, sgd/params/, adadelta/params/
SGD = {"lr": 0.1, "momentum": 0.9}
ADADELTA = {"lr": 1.0, "rho": 0.9, "eps": 1e-6}

# The ResNets' tensors (11-24 million parameters) are cut to their first RESNET_PREFIX elements in every
# tensor set, gradients included, to keep the file small; the BN statistics stay whole.
RESNET_PREFIX = 1024
CASES = [
    {"group": "mnist-cnn", "model": "mnist-cnn", "input": (1, 28, 28), "classes": 10, "widths": None},
    {"group": "wrn-small", "model": "wrn", "input": (3, 32, 32), "classes": 10, "widths": (8, 16, 24, 32)},
    {"group": "resnet18", "model": "resnet18", "input": (3, 64, 64), "classes": 10, "widths": None, "batch": 4,
     "prefix": RESNET_PREFIX, "grads_prefix": RESNET_PREFIX},
    {"group": "resnet50", "model": "resnet50", "input": (3, 64, 64), "classes": 10, "widths": None, "batch": 4,
     "prefix": RESNET_PREFIX, "grads_prefix": RESNET_PREFIX},
]


# ------------------------------------------------------------------------------ the fixture in memory

class Fixture:
    """Datasets by path ("mnist-cnn/grads/conv1.weight") and attributes by object path ("" = root)."""

    def __init__(self):
        self.data, self.attrs = {}, {"": {}}

    def put(self, path, value, limit=None, dtype=np.float32):
        """Stores value; a tensor larger than `limit` is cut to its first `limit` elements, flattened,
        with attributes numel and shape giving the whole."""
        value = np.asarray(value, dtype=dtype)
        if limit is not None and value.size > limit:
            self.attrs[path] = {"numel": int(value.size), "shape": [int(d) for d in value.shape]}
            value = value.ravel()[:limit]
        self.data[path] = value


def write_h5(fixture, path):
    if h5py is None:
        raise SystemExit("writing HDF5 needs h5py (apt-get install python3-h5py, or pip install h5py)")
    with h5py.File(path, "w") as f:
        for name, value in fixture.data.items():
            big = value.size > 1024  # compress the large ones; small datasets stay contiguous
            f.create_dataset(name, data=value, compression="gzip" if big else None,
                             compression_opts=4 if big else None, shuffle=big)
        for name, attrs in fixture.attrs.items():
            obj = f[name] if name else f
            for key, value in attrs.items():
                if key == "shape":
                    value = np.asarray(value, dtype=np.int64)
                elif isinstance(value, (str, np.str_)):
                    value = str(value)  # h5py stores Python str as variable-length UTF-8; numpy '<U' has no HDF5 type
                elif isinstance(value, np.ndarray) and value.dtype.kind == "U":
                    value = np.array([str(v) for v in value.ravel()], dtype=h5py.string_dtype())
                obj.attrs[key] = value


def write_npz(fixture, path):
    np.savez_compressed(path, __attrs__=np.array(json.dumps(fixture.attrs)), **fixture.data)


def read_npz(path):
    fixture = Fixture()
    with np.load(path) as z:
        fixture.attrs = json.loads(str(z["__attrs__"]))
        fixture.data = {k: z[k] for k in z.files if k != "__attrs__"}
    return fixture


# ----------------------------------------------------------------------------------------- the oracle

def dump_weights(tool, case, directory):
    """Runs scalebench's dump tool; returns ({name: float32 array} params, buffers) in flat order."""
    npy = os.path.join(directory, case["group"])
    cmd = [tool, "--model", case["model"], "--input", "x".join(map(str, case["input"])),
           "--classes", str(case["classes"]), "--seed", str(SEED),
           "--out", npy + ".h5", "--npy-dir", npy]
    if case["widths"]:
        cmd += ["--widths", ",".join(map(str, case["widths"]))]
    subprocess.run(cmd, check=True)

    def load(order_file):
        with open(os.path.join(npy, order_file), encoding="utf-8") as f:
            names = [line.strip() for line in f if line.strip()]
        return {n: np.load(os.path.join(npy, n + ".npy")) for n in names}
    return load("param_order.txt"), load("buffer_order.txt")


def torch_model(torch, models, case, params, buffers, dtype, device):
    """The PyTorch network with scalebench's weights, dropout off, in train mode."""
    c, h, w = case["input"]
    model = models.build(case["model"], c, h, w, case["classes"], case["widths"] or models.WRN_WIDTHS, dropout=False)
    state = model.state_dict()
    ours = {**params, **buffers}
    theirs = {k for k in state if not k.endswith("num_batches_tracked")}
    if theirs != set(ours):  # the two model definitions have drifted apart
        raise SystemExit(f"{case['group']}: names differ: only PyTorch {sorted(theirs - set(ours))}, "
                         f"only scalebench {sorted(set(ours) - theirs)}")
    for name, value in ours.items():
        if tuple(state[name].shape) != value.shape:
            raise SystemExit(f"{case['group']}: {name} is {tuple(state[name].shape)} in PyTorch, {value.shape} here")
        state[name] = torch.from_numpy(np.array(value))
    model.load_state_dict(state)
    model = model.to(device=device, dtype=dtype)
    model.train()
    return model


def one_step(torch, models, case, params, buffers, x, y, optimizer, dtype, device):
    """Forward, loss, backward and one optimizer step from the initial weights; results in float64."""
    model = torch_model(torch, models, case, params, buffers, dtype, device)
    out = model(torch.from_numpy(x).to(device=device, dtype=dtype))
    loss = models.loss_fn(case["model"])(out, torch.from_numpy(y).long().to(device))
    loss.backward()
    named = dict(model.named_parameters())
    grads = {n: named[n].grad.detach().double().cpu().numpy() for n in params}
    opt = (torch.optim.SGD(model.parameters(), **SGD) if optimizer == "sgd"
           else torch.optim.Adadelta(model.parameters(), **ADADELTA))
    opt.step()
    state = model.state_dict()
    return {"output": out.detach().double().cpu().numpy(), "loss": float(loss), "grads": grads,
            "params_after": {n: state[n].double().cpu().numpy() for n in params},
            "buffers_after": {n: state[n].double().cpu().numpy() for n in buffers}}


def rel_l2(got, want):
    den = np.linalg.norm(want.ravel())
    return float(np.linalg.norm((got - want).ravel()) / den) if den > 0 else float(np.linalg.norm(got.ravel()))


def gpu_fp32_distance(torch, models, case, params, buffers, x, y, oracle):
    """Largest relative L2 distance of PyTorch's own fp32 CUDA step (TF32 off) from the fp64 oracle."""
    if not torch.cuda.is_available():
        return None
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    r = one_step(torch, models, case, params, buffers, x, y, "sgd", torch.float32, torch.device("cuda"))
    worst = {"output": rel_l2(r["output"], oracle["output"]),
             "loss": abs(r["loss"] - oracle["loss"]) / abs(oracle["loss"]),
             "grads": max(rel_l2(r["grads"][n], oracle["grads"][n]) for n in params)}
    print("  torch fp32 CUDA vs fp64 oracle: " + ", ".join(f"{k} {v:.2e}" for k, v in worst.items()))
    return max(worst.values())


def add_case(fixture, torch_version, case, params, buffers, x, y, sgd, adadelta, gpu_distance):
    g = case["group"]
    log_probs = case["model"] == "mnist-cnn"
    prefix, grads_prefix = case.get("prefix", PREFIX_LIMIT), case.get("grads_prefix")
    attrs = {"model": case["model"], "input": "x".join(map(str, case["input"])), "classes": case["classes"],
             "seed": SEED, "batch": case.get("batch", BATCH), "loss": "nll" if log_probs else "cross_entropy",
             "output": "log_probabilities" if log_probs else "logits",
             "oracle": "PyTorch float64 on the CPU, stored as float32", "torch_version": torch_version,
             "prefix_limit": prefix, "param_order": list(params), "buffer_order": list(buffers)}
    if grads_prefix is not None:
        attrs["grads_prefix_limit"] = grads_prefix
    if case["widths"]:
        attrs["widths"] = ",".join(map(str, case["widths"]))
    attrs.update({f"sgd_{k}": v for k, v in SGD.items()})
    attrs.update({f"adadelta_{k}": v for k, v in ADADELTA.items()})
    if gpu_distance is not None:
        attrs["torch_cuda_fp32_max_rel_error"] = gpu_distance
    fixture.attrs[g] = attrs
    fixture.put(f"{g}/input", x)
    fixture.put(f"{g}/labels", y, dtype=np.int32)
    fixture.put(f"{g}/output", sgd["output"])
    fixture.put(f"{g}/loss", sgd["loss"])
    for n in params:
        fixture.put(f"{g}/params/{n}", params[n], prefix)
        fixture.put(f"{g}/grads/{n}", sgd["grads"][n], grads_prefix)
        fixture.put(f"{g}/sgd/params/{n}", sgd["params_after"][n], prefix)
        fixture.put(f"{g}/adadelta/params/{n}", adadelta["params_after"][n], prefix)
    for n in buffers:
        fixture.put(f"{g}/buffers/{n}", buffers[n])
        fixture.put(f"{g}/buffers_after/{n}", sgd["buffers_after"][n])


def make(dump_tool):
    import torch  # here, so that --from-npz works without torch
    sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
    import sb_torch_models as models

    fixture = Fixture()
    fixture.attrs[""] = {"generator": "tests/reference/make_fixtures.py", "torch_version": torch.__version__,
                         "groups": [c["group"] for c in CASES]}
    cpu64 = (torch.float64, torch.device("cpu"))
    with tempfile.TemporaryDirectory() as work:
        for i, case in enumerate(CASES):
            print(f"{case['group']}:")
            params, buffers = dump_weights(dump_tool, case, work)
            rng = np.random.default_rng(DATA_SEED + i)
            batch = case.get("batch", BATCH)
            x = rng.standard_normal((batch, *case["input"])).astype(np.float32)
            y = rng.integers(0, case["classes"], batch).astype(np.int32)
            sgd = one_step(torch, models, case, params, buffers, x, y, "sgd", *cpu64)
            adadelta = one_step(torch, models, case, params, buffers, x, y, "adadelta", *cpu64)
            for n in params:  # both runs share forward and backward; fp64 on the CPU is deterministic
                assert np.array_equal(sgd["grads"][n], adadelta["grads"][n]), n
            print(f"  loss {sgd['loss']:.6f}, {sum(v.size for v in params.values())} parameters")
            gpu = gpu_fp32_distance(torch, models, case, params, buffers, x, y, sgd)
            add_case(fixture, torch.__version__, case, params, buffers, x, y, sgd, adadelta, gpu)
    return fixture


def main():
    p = argparse.ArgumentParser(description="Writes the PyTorch-oracle fixture of tests/reference/.")
    p.add_argument("--dump-tool", default=os.path.join("build", "tests", "reference", "dump_initial_weights"),
                   help="scalebench's dump_initial_weights (built with the tests)")
    p.add_argument("--out", default=os.path.join(HERE, "fixtures.h5"),
                   help="the fixture (.h5; without h5py a .npz of the same name is written instead)")
    p.add_argument("--from-npz", metavar="FILE", help="only convert a .npz written without h5py into --out (HDF5)")
    args = p.parse_args()
    if args.from_npz:
        fixture = read_npz(args.from_npz)
    else:
        if not os.access(args.dump_tool, os.X_OK):
            sys.exit(f"no executable {args.dump_tool}: build it first (cmake --build build --target "
                     "dump_initial_weights), or pass --dump-tool")
        fixture = make(args.dump_tool)
    out = args.out
    if h5py is None:
        if args.from_npz:
            sys.exit("--from-npz needs h5py (apt-get install python3-h5py, or pip install h5py)")
        out = os.path.splitext(out)[0] + ".npz"
        write_npz(fixture, out)
        print(f"h5py is not installed here: wrote {out}; convert it where h5py is, with\n"
              f"  python3 tests/reference/make_fixtures.py --from-npz {out} --out tests/reference/fixtures.h5")
    else:
        tmp = out + ".tmp"
        write_h5(fixture, tmp)
        os.replace(tmp, out)
    print(f"wrote {out} ({os.path.getsize(out) / 2**20:.1f} MiB)")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""PyTorch as the oracle (issue #4, section 6): writes tests/reference/fixtures.h5.

For each case (mnist-cnn on 1x28x28, and a narrow wrn on 3x32x32) it
  1. has scalebench write its initial weights for a fixed seed (tests/reference/dump_initial_weights),
  2. loads them by name into the same network in PyTorch (bench/sb_torch_models.py), dropout off and
     batch norm in training mode,
  3. runs one training step on a fixed batch of 8 images (numpy RNG, stored in the fixture): forward,
     loss (NLL on log-softmax for mnist-cnn, cross-entropy for wrn), backward, then one SGD step
     (lr 0.1, momentum 0.9) and, separately from the same start, one Adadelta step (lr 1.0),
  4. stores the output, the loss, every gradient, the parameters after each optimizer's step and the
     batch-norm running statistics after the step.

The oracle is PyTorch in float64 on the CPU; the results are stored as float32 (their rounding, ~6e-8,
is far below the tests' 1e-5). Where CUDA is available the same step also runs in float32 on the GPU
(TF32 off), and its distance from the oracle is printed and kept as an attribute: it shows that 1e-5 is
what a correct fp32 implementation reaches.

To keep the file a few MB, "params", "sgd/params" and "adadelta/params" hold at most PREFIX_LIMIT
leading elements (flattened) of a larger tensor (only mnist-cnn's fc1.weight); gradients are complete.

    python3 tests/reference/make_fixtures.py --dump-tool build/tests/reference/dump_initial_weights
"""
import argparse
import os
import subprocess
import sys
import tempfile

try:
    import h5py
except ImportError:
    sys.exit("make_fixtures.py needs h5py (pip install h5py, or apt-get install python3-h5py) next to torch.")
import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
import sb_torch_models as models  # noqa: E402

BATCH = 8
SEED = 1234                # scalebench's initialisation seed
DATA_SEED = 20240611       # numpy RNG of the batch
PREFIX_LIMIT = 65536       # elements kept of a large tensor in params/, sgd/params/, adadelta/params/
SGD = {"lr": 0.1, "momentum": 0.9}
ADADELTA = {"lr": 1.0, "rho": 0.9, "eps": 1e-6}

CASES = [
    {"group": "mnist-cnn", "model": "mnist-cnn", "input": (1, 28, 28), "classes": 10, "widths": None},
    {"group": "wrn-small", "model": "wrn", "input": (3, 32, 32), "classes": 10, "widths": (8, 16, 24, 32)},
]


def dump_weights(tool, case, directory):
    """Runs scalebench's dump tool; returns {name: float32 array} for params and buffers, in flat order."""
    out = os.path.join(directory, case["group"] + "-init.h5")
    cmd = [tool, "--model", case["model"], "--input", "x".join(map(str, case["input"])),
           "--classes", str(case["classes"]), "--seed", str(SEED), "--out", out]
    if case["widths"]:
        cmd += ["--widths", ",".join(map(str, case["widths"]))]
    subprocess.run(cmd, check=True)
    with h5py.File(out, "r") as f:
        def names(attr):
            return [n.decode() if isinstance(n, bytes) else str(n) for n in f.attrs[attr]]
        params = {n: np.array(f["params"][n], dtype=np.float32) for n in names("param_order")}
        buffers = {n: np.array(f["buffers"][n], dtype=np.float32) for n in names("buffer_order")}
    return params, buffers


def torch_model(case, params, buffers, dtype, device):
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
        state[name] = torch.from_numpy(value)
    model.load_state_dict(state)
    model = model.to(device=device, dtype=dtype)
    model.train()
    return model


def one_step(case, params, buffers, x, y, optimizer, dtype, device):
    """Forward, loss, backward and one optimizer step from the initial weights."""
    model = torch_model(case, params, buffers, dtype, device)
    xt = torch.from_numpy(x).to(device=device, dtype=dtype)
    yt = torch.from_numpy(y).long().to(device)
    out = model(xt)
    loss = models.loss_fn(case["model"])(out, yt)
    loss.backward()
    named = dict(model.named_parameters())
    grads = {n: named[n].grad.detach().double().cpu().numpy() for n in params}
    opt = (torch.optim.SGD(model.parameters(), **SGD) if optimizer == "sgd"
           else torch.optim.Adadelta(model.parameters(), **ADADELTA))
    opt.step()
    state = model.state_dict()
    return {
        "output": out.detach().double().cpu().numpy(),
        "loss": float(loss),
        "grads": grads,
        "params_after": {n: state[n].double().cpu().numpy() for n in params},
        "buffers_after": {n: state[n].double().cpu().numpy() for n in buffers},
    }


def rel_l2(got, want):
    den = np.linalg.norm(want.ravel())
    return float(np.linalg.norm((got - want).ravel()) / den) if den > 0 else float(np.linalg.norm(got.ravel()))


def gpu_fp32_distance(case, params, buffers, x, y, oracle):
    """Largest relative L2 distance of PyTorch's own fp32 CUDA step (TF32 off) from the fp64 oracle."""
    if not torch.cuda.is_available():
        return None
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    r = one_step(case, params, buffers, x, y, "sgd", torch.float32, torch.device("cuda"))
    worst = {"output": rel_l2(r["output"], oracle["output"]),
             "loss": abs(r["loss"] - oracle["loss"]) / abs(oracle["loss"]),
             "grads": max(rel_l2(r["grads"][n], oracle["grads"][n]) for n in params)}
    print("  torch fp32 CUDA vs fp64 oracle: " + ", ".join(f"{k} {v:.2e}" for k, v in worst.items()))
    return max(worst.values())


def put(group, name, value, limit=None):
    """A float32 dataset; flattened to its first `limit` elements when larger (attrs numel and shape)."""
    value = np.asarray(value, dtype=np.float32)
    shape = value.shape
    truncated = limit is not None and value.size > limit
    if truncated:
        value = value.ravel()[:limit]
    big = value.size > 1024
    ds = group.create_dataset(name, data=value, compression="gzip" if big else None,
                              compression_opts=4 if big else None, shuffle=big)
    if truncated:
        ds.attrs["numel"] = int(np.prod(shape, dtype=np.int64))
        ds.attrs["shape"] = np.asarray(shape, dtype=np.int64)


def write_case(f, case, params, buffers, x, y, sgd, adadelta, gpu_distance):
    g = f.create_group(case["group"])
    g.attrs["model"] = case["model"]
    g.attrs["input"] = "x".join(map(str, case["input"]))
    g.attrs["classes"] = case["classes"]
    if case["widths"]:
        g.attrs["widths"] = ",".join(map(str, case["widths"]))
    g.attrs["seed"] = SEED
    g.attrs["batch"] = BATCH
    g.attrs["loss"] = "nll" if models.outputs_log_probabilities(case["model"]) else "cross_entropy"
    g.attrs["output"] = "log_probabilities" if models.outputs_log_probabilities(case["model"]) else "logits"
    g.attrs["oracle"] = "PyTorch float64 on the CPU, stored as float32"
    g.attrs["torch_version"] = torch.__version__
    g.attrs["prefix_limit"] = PREFIX_LIMIT
    g.attrs["param_order"] = list(params)
    g.attrs["buffer_order"] = list(buffers)
    for k, v in SGD.items():
        g.attrs[f"sgd_{k}"] = v
    for k, v in ADADELTA.items():
        g.attrs[f"adadelta_{k}"] = v
    if gpu_distance is not None:
        g.attrs["torch_cuda_fp32_max_rel_error"] = gpu_distance
    g.create_dataset("input", data=x.astype(np.float32))
    g.create_dataset("labels", data=y.astype(np.int32))
    put(g, "output", sgd["output"])
    put(g, "loss", np.float32(sgd["loss"]))
    groups = {k: g.create_group(k) for k in ("params", "buffers", "grads", "buffers_after", "sgd", "adadelta")}
    sgd_params, adadelta_params = groups["sgd"].create_group("params"), groups["adadelta"].create_group("params")
    for n in params:
        put(groups["params"], n, params[n], PREFIX_LIMIT)
        put(groups["grads"], n, sgd["grads"][n])
        put(sgd_params, n, sgd["params_after"][n], PREFIX_LIMIT)
        put(adadelta_params, n, adadelta["params_after"][n], PREFIX_LIMIT)
    for n in buffers:
        put(groups["buffers"], n, buffers[n])
        put(groups["buffers_after"], n, sgd["buffers_after"][n])


def main():
    p = argparse.ArgumentParser(description="Writes the PyTorch-oracle fixture of tests/reference/.")
    p.add_argument("--dump-tool", default=os.path.join("build", "tests", "reference", "dump_initial_weights"),
                   help="path of scalebench's dump_initial_weights (built with the tests)")
    p.add_argument("--out", default=os.path.join(HERE, "fixtures.h5"))
    args = p.parse_args()
    if not os.access(args.dump_tool, os.X_OK):
        sys.exit(f"no executable {args.dump_tool}: build the tests first (cmake --build build --target "
                 "dump_initial_weights), or pass --dump-tool")
    tmp = args.out + ".tmp"
    with tempfile.TemporaryDirectory() as work, h5py.File(tmp, "w") as f:
        f.attrs["generator"] = "tests/reference/make_fixtures.py"
        f.attrs["torch_version"] = torch.__version__
        f.attrs["groups"] = [c["group"] for c in CASES]
        for i, case in enumerate(CASES):
            print(f"{case['group']}:")
            params, buffers = dump_weights(args.dump_tool, case, work)
            rng = np.random.default_rng(DATA_SEED + i)
            x = rng.standard_normal((BATCH, *case["input"])).astype(np.float32)
            y = rng.integers(0, case["classes"], BATCH).astype(np.int32)
            cpu64 = (torch.float64, torch.device("cpu"))
            sgd = one_step(case, params, buffers, x, y, "sgd", *cpu64)
            adadelta = one_step(case, params, buffers, x, y, "adadelta", *cpu64)
            for n in params:  # the two runs share the forward and backward; fp64 CPU is deterministic
                assert np.array_equal(sgd["grads"][n], adadelta["grads"][n]), n
            print(f"  loss {sgd['loss']:.6f}, {sum(v.size for v in params.values())} parameters")
            write_case(f, case, params, buffers, x, y, sgd, adadelta, gpu_fp32_distance(case, params, buffers, x, y, sgd))
    os.replace(tmp, args.out)
    print(f"wrote {args.out} ({os.path.getsize(args.out) / 2**20:.1f} MiB)")


if __name__ == "__main__":
    main()

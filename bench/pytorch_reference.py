#!/usr/bin/env python3
"""PyTorch reference for side-by-side runs with scalebench (docs/benchmarks.md).

Throughput: trains one of scalebench's models (the names, input shapes and parameter counts of
`scalebench info --models`, bench/scalebench_models.py; the layers of bench/sb_torch_models.py, as
src/models/) on synthetic GPU-resident tensors (no DataLoader) and reports images/s = global batch /
median step time.

    python3 bench/pytorch_reference.py --model wrn --batch-size 256 --precision bf16 --channels-last
    torchrun --nproc-per-node 2 bench/pytorch_reference.py --model wrn --precision bf16 --channels-last
    mpirun -np 2 python3 bench/pytorch_reference.py --model mnist-cnn --batch-size 64
    python3 bench/pytorch_reference.py --model mnist-cnn --batch-size 64 --dp 4   # nn.DataParallel, one process

Learning: the wrn trained with SGD on a CIFAR-100 binary folder, test accuracy per epoch
(bench/torch_learning.py; Fashion-MNIST in that format comes from bench/fashion_mnist_as_cifar100.py);
or resnet18 trained on an image folder with torchvision's reference recipe, as scalebench's resnet18
recipe applies it, decoded in the DataLoader's workers (bench/torch_image_learning.py).

    python3 bench/pytorch_reference.py --learn DIR --precision bf16 --channels-last --lr 0.01 --batch-size 256
    python3 bench/pytorch_reference.py --learn imagefolder:DIR --model resnet18 --precision bf16 --channels-last \
        --epochs 8 --workers 15 --seed 1 --json OUT

Time to accuracy: mnist-cnn on Fashion-MNIST (IDX files, GPU-resident), Adadelta lr 1.0, StepLR gamma
0.7, batch 64, evaluated after every epoch until the test accuracy reaches the target.

    python3 bench/pytorch_reference.py --time-to-accuracy /usr/share/datasets/fashion-mnist

Image files: resnet50 trained from a JPEG folder through a DataLoader (bench/torch_image_pipeline.py),
decoded in the workers (--decode cpu) or with nvJPEG (--decode gpu), img/s the median of the epochs after
the first; --io times the input pipeline alone for each decoder and worker count, as `scalebench io`.

    python3 bench/pytorch_reference.py --model resnet50 --data imagefolder:DIR --decode cpu --workers 15 \
        --precision bf16 --channels-last --compile --epochs 3 --train-limit 10240 --json OUT
    python3 bench/pytorch_reference.py --io --data imagefolder:DIR --decode cpu,gpu --workers 1,4,8,15 --csv OUT

--json writes one result (also a valid analysis/report.py --reference file); --reference-out merges the
result into a reference file that collects several GPU counts of one configuration.
"""
import contextlib
import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import idx_files  # noqa: E402
import io_rows  # noqa: E402
import sb_torch_models as models  # noqa: E402
from reference_options import parse_args  # noqa: E402


def shape_of(listed):
    """C, H, W, classes of the input a model is documented with, as scalebench lists it."""
    return (*listed["input"], listed["classes"])


# ----------------------------------------------------------------------------------------- processes

def _env_int(*names, default=None):
    for name in names:
        if os.environ.get(name) not in (None, ""):
            return int(os.environ[name])
    return default


def init_distributed():
    """Rank, world size and local rank from torchrun (RANK...), Open MPI (OMPI_COMM_WORLD_*) or Slurm."""
    rank = _env_int("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", default=0)
    world = _env_int("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS", default=1)
    local = _env_int("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID", default=0)
    if not torch.cuda.is_available():
        sys.exit("pytorch_reference.py: no CUDA device is visible; it times GPU training only.")
    torch.cuda.set_device(local % torch.cuda.device_count())
    if world > 1:
        # env:// reads these; mpirun sets none of them (one node: the defaults work).
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29500")
        os.environ["RANK"], os.environ["WORLD_SIZE"] = str(rank), str(world)
        dist.init_process_group("nccl", init_method="env://", rank=rank, world_size=world)
    return rank, world, local


def log(rank, *a):
    if rank == 0:
        print(*a, flush=True)


# ------------------------------------------------------------------------------------------ training

def make_optimizer(name, params):
    if name == "adadelta":
        return torch.optim.Adadelta(params, lr=1.0)
    return torch.optim.SGD(params, lr=0.1, momentum=0.9)


def build_model(args, device, classes=None):
    """The model for its listed input, or for `classes` classes (an image folder's) when given."""
    c, h, w, listed_classes = shape_of(args.listed)
    model = models.build(args.model, c, h, w, classes or listed_classes).to(device)
    expected = args.listed["parameters"]
    if classes in (None, listed_classes) and models.parameter_count(model) != expected:  # the same network as scalebench's, or a bug here
        raise SystemExit(f"{args.model} has {models.parameter_count(model)} parameters, scalebench's {expected}")
    if models.outputs_log_probabilities(args.model) != args.listed["outputs_log_probabilities"]:
        raise SystemExit(f"{args.model}: the twin's output (log-probabilities or logits) is not scalebench's")
    if args.channels_last:
        model = model.to(memory_format=torch.channels_last)
    return model


class Step:
    """One training step in the chosen precision; __call__(x, y) runs it."""

    def __init__(self, args, model, world):
        self.model = model
        self.optimizer = make_optimizer(args.optimizer, model.parameters())
        if world > 1:
            self.model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[torch.cuda.current_device()])
            if args.allreduce_bf16:
                from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
                self.model.register_comm_hook(None, default_hooks.bf16_compress_hook)
        elif args.dp:
            self.model = torch.nn.DataParallel(model, device_ids=list(range(args.dp)))
        if args.compile:
            self.model = torch.compile(self.model, mode=args.compile_mode)
        self.loss = models.loss_fn(args.model)
        self.amp_dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(args.precision)
        # GradScaler: fp16 needs dynamic loss scaling; bf16 does not (as in torch's AMP recipes).
        self.scaler = torch.amp.GradScaler("cuda", enabled=args.precision == "fp16")

    def __call__(self, x, y):
        self.optimizer.zero_grad(set_to_none=True)
        autocast = (torch.autocast("cuda", dtype=self.amp_dtype) if self.amp_dtype is not None
                    else contextlib.nullcontext())
        with autocast:
            loss = self.loss(self.model(x), y)
        self.scaler.scale(loss).backward()
        self.scaler.step(self.optimizer)
        self.scaler.update()
        return loss


def synthetic_batches(args, device, count=4):
    """A few random batches resident on the GPU, cycled through (no host work per step); with --dp, the
    whole batch of every GPU on GPU 0, which DataParallel scatters."""
    c, h, w, classes = shape_of(args.listed)
    n = args.batch_size * max(1, args.dp)
    g = torch.Generator(device=device).manual_seed(args.seed)
    fmt = torch.channels_last if args.channels_last else torch.contiguous_format
    out = []
    for _ in range(count):
        x = torch.randn(n, c, h, w, device=device, generator=g).contiguous(memory_format=fmt)
        y = torch.randint(0, classes, (n,), device=device, generator=g)
        out.append((x, y))
    return out


def time_steps(step, batches, warmup, steps):
    """Per-step times in ms from CUDA events: the GPU's timeline, host launch gaps included."""
    for i in range(warmup):
        step(*batches[i % len(batches)])
    torch.cuda.synchronize()
    events = [torch.cuda.Event(enable_timing=True) for _ in range(steps + 1)]
    wall0 = time.perf_counter()
    events[0].record()
    for i in range(steps):
        step(*batches[i % len(batches)])
        events[i + 1].record()
    torch.cuda.synchronize()
    wall = time.perf_counter() - wall0
    return [events[i].elapsed_time(events[i + 1]) for i in range(steps)], wall


def throughput(args):
    rank, world, _ = init_distributed()
    if args.dp and (world > 1 or args.dp > torch.cuda.device_count()):
        raise SystemExit(f"--dp {args.dp} runs in one process over that many GPUs; launch one process on a node "
                         f"with at least {args.dp} GPUs ({torch.cuda.device_count()} visible, {world} processes)")
    gpus = args.dp or world
    device = torch.device("cuda", torch.cuda.current_device())
    torch.manual_seed(args.seed)
    torch.backends.cudnn.benchmark = True  # pick the fastest convolution algorithms, as tuned PyTorch runs do
    torch.backends.cudnn.allow_tf32 = not args.no_tf32
    files = None
    if args.image_folder:
        import torch_image_pipeline as images  # noqa: E402 (torchvision only where files are read)
        files = images.TrainingInput(args, device, world, rank)
    model = build_model(args, device, files.classes if files else None)
    step = Step(args, model, world)
    log(rank, f"# {args.model} batch {args.batch_size} x {gpus} GPU(s){' (DataParallel)' if args.dp else ''}, {args.precision}"
              f"{', channels_last' if args.channels_last else ''}{', compile' if args.compile else ''}"
              f", {args.optimizer}, {torch.cuda.get_device_name(device)}, torch {torch.__version__}"
              f"{files_description(args) if files else ''}")
    if files:  # epochs from the files; each timed epoch's mean step stands for its steps
        times, wall, steps, data_details = images.time_epochs(step, files, args.epochs, lambda *a: log(rank, *a))
        warmup = data_details["epochs"][0]["steps"]
    else:
        batches = synthetic_batches(args, device)
        times, wall = time_steps(step, batches, args.warmup, args.steps)
        steps, warmup, data_details = args.steps, args.warmup, {}
    median = statistics.median(times)
    if world > 1:  # the slowest rank sets the pace of data-parallel training
        t = torch.tensor([median], device=device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        median = float(t.item())
    global_batch = args.batch_size * gpus
    result = {
        "label": args.label or default_label(args),
        "model": args.model,
        "precision": args.precision,
        "channels_last": args.channels_last,
        "compile": (args.compile_mode or "default") if args.compile else False,
        "optimizer": args.optimizer,
        "gpus": gpus,
        "parallel": "dp" if args.dp else "ddp",
        "batch_size": args.batch_size,
        "global_batch_size": global_batch,
        "images_per_s": global_batch / (median / 1e3),
        "images_per_s_wall": global_batch * steps / wall,
        "step_ms_median": median,
        "step_ms_min": min(times),
        "step_ms_p90": sorted(times)[int(0.9 * (len(times) - 1))],
        "steps": steps,
        "warmup": warmup,
        "device": torch.cuda.get_device_name(device),
        "torch_version": torch.__version__,
        "cuda_version": torch.version.cuda,
        "cudnn_version": torch.backends.cudnn.version(),
        # What the caching allocator handed out at most: the figure scalebench's peak_memory_bytes is set beside.
        "max_memory_allocated_bytes": torch.cuda.max_memory_allocated(device),
        "scaling": "weak",
        **data_details,
    }
    # The same file is a valid analysis/report.py --reference file (analysis/README.md).
    result["results"] = [{"gpus": gpus, "images_per_s": result["images_per_s"], "batch_size": args.batch_size}]
    log(rank, f"{result['label']}: {result['images_per_s']:,.0f} images/s "
              f"(median step {median:.3f} ms, wall-clock {result['images_per_s_wall']:,.0f} images/s, "
              f"peak memory allocated {result['max_memory_allocated_bytes'] / 2**30:.2f} GiB)")
    if data_details:
        log(rank, f"waited {data_details['data_wait_ms_per_step']:.2f} ms a step for data "
                  f"({data_details['data_wait_share']:.1%} of the timed epochs)")
    if args.profile_kernels and rank == 0:
        result["kernel_ms_per_step"] = profile_kernels(step, batches, args.profile_kernels)
    if rank == 0:
        write_outputs(args, result)
    if world > 1:
        dist.destroy_process_group()
    return result


# Kernel kinds by name, first match wins: cuDNN's convolution kernels name their pass (fprop, dgrad, wgrad).
KERNEL_KINDS = [("convolution forward", ("fprop",)), ("convolution dgrad", ("dgrad",)),
                ("convolution wgrad", ("wgrad",)), ("layout transposes", ("nchwtonhwc", "nhwctonchw", "transpose")),
                ("Triton fused", ("triton",)), ("batch norm", ("batch_norm", "batchnorm", "bn_")),
                ("GEMM", ("gemm", "nvjet", "cutlass")), ("optimizer", ("multi_tensor", "foreach", "sgd"))]


def kernel_kind(name):
    low = name.lower()
    for kind, needles in KERNEL_KINDS:
        if any(n in low for n in needles):
            return kind
    return "other elementwise and reductions"


def profile_kernels(step, batches, steps):
    """GPU time per step by kernel kind and of the top kernels, from torch.profiler over `steps` steps."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
        for i in range(steps):
            step(*batches[i % len(batches)])
        torch.cuda.synchronize()
    kernels = [e for e in prof.key_averages() if getattr(e, "device_type", None) == DeviceType.CUDA]
    def ms(e):  # device time in ms per step
        t = getattr(e, "self_device_time_total", None)
        if t is None:
            t = e.self_cuda_time_total
        return t / 1e3 / steps
    kinds = {}
    for e in kernels:
        k = kinds.setdefault(kernel_kind(e.key), [0.0, 0])
        k[0] += ms(e)
        k[1] += e.count / steps
    total = sum(v[0] for v in kinds.values())
    print(f"GPU kernel time per step by kind ({steps} profiled steps):")
    for kind, (t, n) in sorted(kinds.items(), key=lambda kv: -kv[1][0]):
        print(f"  {kind:<34} {t:8.3f} ms  {n:6.1f} kernels")
    print(f"  {'total':<34} {total:8.3f} ms")
    print("top kernels (ms per step, launches per step):")
    for e in sorted(kernels, key=ms, reverse=True)[:25]:
        print(f"  {ms(e):8.3f} ms {e.count / steps:5.1f}x  {e.key[:110]}")
    # The host side too: where a step's wall time goes when the GPU waits (launch overhead, threads, copies).
    host = [e for e in prof.key_averages() if getattr(e, "device_type", None) == DeviceType.CPU]
    print("top host operations (self CPU ms per step, calls per step):")
    for e in sorted(host, key=lambda e: e.self_cpu_time_total, reverse=True)[:15]:
        print(f"  {e.self_cpu_time_total / 1e3 / steps:8.3f} ms {e.count / steps:6.1f}x  {e.key[:100]}")
    print_convolutions(prof, steps)
    return {kind: t for kind, (t, _) in kinds.items()}


def print_convolutions(prof, steps):
    """GPU time of each convolution call by input shapes: the per-layer figures to set beside
    bench/layer_profile's (forward = cudnn_convolution, backward = convolution_backward, dgrad and wgrad)."""
    ops = ("aten::cudnn_convolution", "aten::convolution_backward")
    rows = [e for e in prof.key_averages(group_by_input_shape=True) if e.key in ops]
    def ms(e):
        t = getattr(e, "device_time_total", None)
        if t is None:
            t = e.cuda_time_total
        return t / 1e3 / steps
    print("convolutions by input shapes (GPU ms per step, calls per step; the first two shapes are input and weight):")
    for e in sorted(rows, key=lambda e: (e.key, str(e.input_shapes[:2]))):
        shapes = " ".join(str(s) for s in e.input_shapes[:3])
        print(f"  {ms(e):8.3f} ms {e.count / steps:5.1f}x  {e.key:<28} {shapes}")
    print(f"  {sum(ms(e) for e in rows):8.3f} ms in all")


def default_label(args):
    parts = [f"PyTorch {torch.__version__.split('+')[0]}", args.model, args.precision]
    if args.channels_last:
        parts.append("channels_last")
    if args.compile:
        parts.append("compile" + (f" {args.compile_mode}" if args.compile_mode else ""))
    if args.dp:
        parts.append("DataParallel")
    if args.allreduce_bf16:
        parts.append("bf16 all-reduce")
    if args.image_folder:
        parts.append(f"files, {args.decoders[0]} decode" +
                     (f", {args.worker_counts[0]} workers" if args.decoders[0] == "cpu" else ""))
    return " ".join(parts)


def files_description(args):
    return (f", {args.data} ({args.decoders[0]} decode, {args.worker_counts[0]} workers, "
            f"{args.image_size} px crops{f', first {args.train_limit} files' if args.train_limit else ''})")


def write_json(path, doc):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")


def write_outputs(args, result):
    if args.json:
        write_json(args.json, result)
    if args.reference_out:
        merge_reference(args.reference_out, result)


def merge_reference(path, result):
    """Adds (or replaces) this GPU count's entry in a list-form reference file."""
    doc = {"label": result["label"], "scaling": "weak", "batch_size": result["batch_size"], "results": []}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        if doc.get("label") != result["label"]:
            raise SystemExit(f"{path} holds the series {doc.get('label')!r}, not {result['label']!r}; "
                             "use another file or --label")
    keep = [r for r in doc.get("results", []) if r.get("gpus") != result["gpus"]]
    keep.append({k: result[k] for k in ("gpus", "images_per_s", "batch_size", "step_ms_median", "device")})
    doc["results"] = sorted(keep, key=lambda r: r["gpus"])
    doc.update({k: result[k] for k in ("model", "precision", "channels_last", "compile", "torch_version")})
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")


# --------------------------------------------------------------------------------- time to accuracy

def read_idx(path):
    """An IDX file (.gz or plain) as a uint8 tensor: images [N, H, W] or labels [N]."""
    dims, body = idx_files.read_idx(path, "point --time-to-accuracy at a Fashion-MNIST directory")
    return torch.frombuffer(bytearray(body), dtype=torch.uint8).reshape(dims)


def load_fashion_mnist(directory, device, mean, std):
    def split(prefix):
        x = read_idx(os.path.join(directory, f"{prefix}-images-idx3-ubyte")).to(device)
        y = read_idx(os.path.join(directory, f"{prefix}-labels-idx1-ubyte")).to(device).long()
        x = ((x.float() / 255.0 - mean) / std).unsqueeze(1)  # normalised once, kept on the GPU
        return x, y
    return split("train"), split("t10k")


def time_to_accuracy(args):
    rank, world, _ = init_distributed()
    if world > 1:
        sys.exit("--time-to-accuracy runs on one GPU")
    device = torch.device("cuda", torch.cuda.current_device())
    torch.manual_seed(args.seed)
    torch.backends.cudnn.benchmark = True
    mean, std = (float(v) for v in args.normalize.split(","))
    t0 = time.perf_counter()
    (train_x, train_y), (test_x, test_y) = load_fashion_mnist(args.time_to_accuracy, device, mean, std)
    torch.cuda.synchronize()
    load_s = time.perf_counter() - t0

    model = models.MnistCnn().to(device)
    opt = torch.optim.Adadelta(model.parameters(), lr=1.0)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.7)
    net = torch.compile(model, mode=args.compile_mode) if args.compile else model
    # AMP as in the throughput runs: autocast to --precision's dtype, GradScaler for fp16 only.
    amp_dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(args.precision)
    scaler = torch.amp.GradScaler("cuda", enabled=args.precision == "fp16")

    def autocast():
        return torch.autocast("cuda", dtype=amp_dtype, enabled=amp_dtype is not None)

    batch, n = args.batch_size, train_x.shape[0]
    history = []
    torch.cuda.synchronize()
    start = time.perf_counter()
    reached = None
    for epoch in range(1, args.max_epochs + 1):
        net.train()
        order = torch.randperm(n, device=device)
        for begin in range(0, n, batch):
            idx = order[begin:begin + batch]
            opt.zero_grad(set_to_none=True)
            with autocast():
                loss = F.nll_loss(net(train_x[idx]).float(), train_y[idx])
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        sched.step()
        net.eval()
        correct, loss_sum = 0, 0.0
        with torch.no_grad(), autocast():
            for begin in range(0, test_x.shape[0], 1000):
                out = net(test_x[begin:begin + 1000]).float()
                loss_sum += float(F.nll_loss(out, test_y[begin:begin + 1000], reduction="sum"))
                correct += int((out.argmax(1) == test_y[begin:begin + 1000]).sum())
        accuracy = correct / test_x.shape[0]
        elapsed = time.perf_counter() - start
        history.append({"epoch": epoch, "seconds": elapsed, "test_accuracy": accuracy,
                        "test_loss": loss_sum / test_x.shape[0]})
        log(rank, f"epoch {epoch}: test accuracy {accuracy:.4f}, {elapsed:.2f} s")
        if accuracy >= args.target:
            reached = history[-1]
            break
    result = {
        "label": args.label or f"PyTorch {torch.__version__.split('+')[0]} mnist-cnn GPU-resident",
        "model": "mnist-cnn", "mode": "time-to-accuracy", "target_accuracy": args.target,
        "reached": reached is not None,
        "time_to_accuracy_s": reached["seconds"] if reached else None,
        "epochs": reached["epoch"] if reached else None,
        "load_s": load_s, "history": history, "batch_size": batch, "gpus": 1, "precision": args.precision,
        "device": torch.cuda.get_device_name(device), "torch_version": torch.__version__,
    }
    if reached:
        log(rank, f"reached {args.target:.0%} in {reached['seconds']:.2f} s after {reached['epoch']} epoch(s)"
                  f" (data load {load_s:.2f} s, not counted)")
    else:
        log(rank, f"did not reach {args.target:.0%} in {args.max_epochs} epochs")
    if args.json:
        write_json(args.json, result)
    return result


# ------------------------------------------------------------------------------------ input pipeline

def input_pipeline(args):
    """--io: the DataLoader (and nvJPEG) alone for each --decode and --workers, batches ending on the GPU;
    the rows of `scalebench io`."""
    _, world, _ = init_distributed()
    if world > 1:
        sys.exit("--io runs on one process")
    device = torch.device("cuda", torch.cuda.current_device())
    torch.manual_seed(args.seed)
    import torchvision
    import torch_image_pipeline as images  # noqa: E402
    log(0, f"# input pipeline alone: {args.data}, batch {args.batch_size}, {args.image_size} px crops, prefetch "
           f"{args.prefetch_factor}, {torch.cuda.get_device_name(device)}, torch {torch.__version__}, "
           f"torchvision {torchvision.__version__}, {len(os.sched_getaffinity(0))} cores")
    rows = images.io_rates(args, device, lambda *a: log(0, *a))
    result = {"label": args.label or f"PyTorch {torch.__version__.split('+')[0]} DataLoader", "mode": "io",
              "data": args.data, "batch_size": args.batch_size, "image_size": args.image_size,
              "prefetch_factor": args.prefetch_factor, "train_limit": args.train_limit, "rows": rows,
              "cores": len(os.sched_getaffinity(0)), "device": torch.cuda.get_device_name(device),
              "torch_version": torch.__version__, "torchvision_version": torchvision.__version__}
    if args.json:
        write_json(args.json, result)
    if args.csv:
        io_rows.write_csv(args.csv, rows)
    return result


def main(argv=None):
    args = parse_args(argv)
    if args.learn:
        if args.learn_kind == "imagefolder":
            import torch_image_learning as learning  # noqa: E402 (only this mode needs torchvision's DataLoader pieces)
        else:
            import torch_learning as learning  # noqa: E402 (only this mode needs it)
        result = learning.learn(args, lambda *a: log(0, *a))
        if args.json:
            write_json(args.json, result)
    elif args.time_to_accuracy:
        time_to_accuracy(args)
    elif args.io:
        input_pipeline(args)
    else:
        throughput(args)


if __name__ == "__main__":
    main()

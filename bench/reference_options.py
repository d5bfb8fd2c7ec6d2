"""The command line of bench/pytorch_reference.py. Needs no PyTorch, so that its checks are tested where
PyTorch is not installed (tests/analysis/test_reference_options.py)."""
import argparse

from image_folder_layout import list_image_folder

DECODERS = ("cpu", "gpu")
IO_WORKERS = "1,4,8,15"  # scalebench io's default worker counts


def whole_list(option, text, minimum):
    """'1,4,8' as [1, 4, 8]; every value a whole number >= minimum, else a message naming the option."""
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        values = []
    if not values or any(v < minimum for v in values):
        raise ValueError(f"{option} '{text}': expected whole numbers >= {minimum}, comma-separated (e.g. {IO_WORKERS})")
    return values


def decoder_list(text):
    values = text.split(",")
    if not values or any(v not in DECODERS for v in values):
        raise ValueError(f"--decode '{text}': expected cpu, gpu or cpu,gpu")
    return values


def image_folder(text):
    """'imagefolder:DIR' as DIR; the other forms of scalebench's --data are not read here."""
    kind, _, folder = text.partition(":")
    if kind != "imagefolder" or not folder:
        raise ValueError(f"--data '{text}': pytorch_reference.py reads imagefolder:DIR (DIR/train/CLASS/*); "
                         "the other data sets of scalebench's --data have no DataLoader here")
    return folder


# --learn imagefolder:DIR trains these with torchvision's reference recipe, as their scalebench recipe does.
LEARN_IMAGE_MODELS = ("resnet18", "resnet34", "resnet50")
LEARN_DEFAULTS = {"cifar100": {"lr": 0.01, "momentum": 0.0, "weight_decay": 0.0},  # the WRN guide
                  "imagefolder": {"lr": 0.1, "momentum": 0.9, "weight_decay": 1e-4}}  # torchvision's reference


def add_image_options(p):
    g = p.add_argument_group("image files (--data imagefolder:DIR, --io, --learn imagefolder:DIR)")
    g.add_argument("--data", metavar="imagefolder:DIR",
                   help="train from the JPEG/PNG files of DIR/train/CLASS/* through a DataLoader (default: "
                        "synthetic GPU-resident tensors)")
    g.add_argument("--io", action="store_true",
                   help="the input pipeline alone, no model: img/s for each --decode and --workers (needs --data)")
    g.add_argument("--decode", default=None,
                   help="cpu: torchvision.io.decode_jpeg and the v2 transforms in the DataLoader's workers; gpu: "
                        "the workers read the bytes, nvJPEG decodes the batch and the transforms run on the GPU "
                        "(default: cpu; --io takes a list, default cpu,gpu)")
    g.add_argument("--workers", default=None,
                   help=f"DataLoader workers (default 8; --io takes a list, default {IO_WORKERS})")
    g.add_argument("--prefetch-factor", type=int, default=2,
                   help="batches each worker prepares ahead (default 2, torch's: 15 workers keep 30 batches in flight, "
                        "4.6 GB of float32 at 224 px in shared memory)")
    g.add_argument("--image-size", type=int, default=224, help="RandomResizedCrop's output size (default 224)")
    g.add_argument("--train-limit", type=int, default=0, metavar="N",
                   help="train on the first N files of the folder (0: all), as scalebench's --train-limit")
    g.add_argument("--batches", type=int, default=40, help="--io: timed batches per configuration (default 40)")
    g.add_argument("--csv", metavar="OUT",
                   help="--io: the rows as CSV, the columns of `scalebench io --out`")


def check_learning_options(p, args):
    """Resolves --learn into args.learn_kind (None, cifar100 or imagefolder), the folder and, for image files,
    args.learn_listing (image_folder_layout.list_image_folder's), and the recipe's unset values."""
    args.learn_kind, args.learn_listing = None, None
    if not args.learn:
        for option in ("lr", "momentum", "weight_decay"):
            if getattr(args, option) is not None:
                p.error(f"--{option.replace('_', '-')} sets the recipe of --learn; leave it out")
        return
    if args.time_to_accuracy:
        p.error("--learn and --time-to-accuracy are two different runs; choose one")
    if args.data:
        p.error("--data is for throughput and --io runs; --learn and --time-to-accuracy read their own folders")
    kind, _, folder = args.learn.partition(":")
    if kind == "imagefolder":
        if args.model not in (None,) + LEARN_IMAGE_MODELS:
            p.error(f"--learn imagefolder: trains {', '.join(LEARN_IMAGE_MODELS)} (torchvision's reference recipe); "
                    f"--model {args.model} has none here")
        args.model = args.model or "resnet18"
        for option, allowed in (("decode", args.decode in (None, "cpu")), ("csv", not args.csv), ("io", not args.io),
                                ("train-limit", not args.train_limit)):
            if not allowed:
                p.error(f"--learn imagefolder: decodes every image in the DataLoader's workers and trains on the whole "
                        f"folder; leave --{option} out")
        try:
            args.worker_counts = whole_list("--workers", args.workers or "8", 0)
        except ValueError as e:
            p.error(str(e))
        if len(args.worker_counts) > 1:
            p.error("--learn takes one --workers; lists are for --io")
        if args.prefetch_factor < 1 or args.image_size < 1:
            p.error("--prefetch-factor and --image-size must be positive")
        try:
            args.learn_listing = list_image_folder(folder)
        except ValueError as e:
            p.error(f"--learn {args.learn}: {e}")
        args.learn_kind, args.learn = "imagefolder", folder
    else:
        if args.model not in (None, "wrn"):
            p.error("--learn DIR trains the wrn on CIFAR-100 binary files; leave --model out (or give "
                    "--learn imagefolder:DIR for a ResNet on image files)")
        for option in ("decode", "workers", "csv", "io"):
            if getattr(args, option):
                p.error(f"--{option} needs --data imagefolder:DIR or --learn imagefolder:DIR")
        args.learn_kind = "cifar100"
    for option, value in LEARN_DEFAULTS[args.learn_kind].items():
        if getattr(args, option) is None:
            setattr(args, option, value)
    if args.lr <= 0 or args.momentum < 0 or args.weight_decay < 0:
        p.error("--lr must be positive, --momentum and --weight-decay not negative")


def check_image_options(p, args):
    """Resolves --data, --decode and --workers into args.image_folder, args.decoders and args.worker_counts."""
    args.image_folder = None
    if args.data is None:
        if args.learn_kind == "imagefolder":
            args.decoders = ["cpu"]
            return
        for option in ("io", "decode", "workers", "csv"):
            if getattr(args, option):
                p.error(f"--{option} needs --data imagefolder:DIR")
        return
    try:
        args.image_folder = image_folder(args.data)
        args.decoders = decoder_list(args.decode or ("cpu,gpu" if args.io else "cpu"))
        args.worker_counts = whole_list("--workers", args.workers or (IO_WORKERS if args.io else "8"), 0)
    except ValueError as e:
        p.error(str(e))
    if args.time_to_accuracy:
        p.error("--data is for throughput and --io runs; --learn and --time-to-accuracy read their own folders")
    if not args.io and (len(args.decoders) > 1 or len(args.worker_counts) > 1):
        p.error("a training run takes one --decode and one --workers; lists are for --io")
    if args.dp:
        p.error("--data runs on one process per GPU; leave --dp out")
    if args.profile_kernels and not args.io:
        p.error("--profile-kernels profiles synthetic batches; leave --data out")
    if args.csv and not args.io:
        p.error("--csv writes --io's rows; a training run writes --json")
    if args.prefetch_factor < 1 or args.image_size < 1 or args.train_limit < 0 or args.batches < 1:
        p.error("--prefetch-factor, --image-size and --batches must be positive, --train-limit not negative")


def parse_args(argv=None, listed=None):
    """The options, checked. listed: scalebench's models (scalebench_models.listed_models(), read from the
    binary when not given)."""
    p = argparse.ArgumentParser(prog="pytorch_reference.py",
                                description="PyTorch reference for side-by-side runs with scalebench (docs/benchmarks.md).")
    if listed is None:
        from scalebench_models import listed_models
        listed = listed_models()  # scalebench's registry: the names, shapes and parameter counts
    p.add_argument("--model", choices=list(listed), default=None,
                   help="default: wrn (mnist-cnn with --time-to-accuracy)")
    p.add_argument("--batch-size", type=int, default=None, help="per-GPU batch (default: 64 mnist-cnn, 256 wrn)")
    p.add_argument("--precision", choices=["fp32", "fp16", "bf16"], default="fp32",
                   help="fp32 (TF32 convolutions), or AMP autocast fp16 (GradScaler) / bf16")
    p.add_argument("--channels-last", action="store_true", help="NHWC memory format for the model and data")
    p.add_argument("--compile", action="store_true", help="torch.compile the model (long compile time)")
    p.add_argument("--dp", type=int, default=0, metavar="N",
                   help="torch.nn.DataParallel over GPUs 0..N-1 from this one process (--batch-size per GPU)")
    p.add_argument("--allreduce-bf16", action="store_true",
                   help="DDP all-reduces the gradients in bf16 (torch's bf16_compress_hook), as scalebench's --allreduce-bf16")
    p.add_argument("--compile-mode", default=None,
                   help="torch.compile mode: default, reduce-overhead (CUDA graphs), max-autotune")
    p.add_argument("--no-tf32", action="store_true", help="fp32 convolutions without TF32")
    p.add_argument("--steps", type=int, default=100, help="timed steps")
    p.add_argument("--warmup", type=int, default=20, help="untimed steps first (compilation happens here)")
    p.add_argument("--optimizer", choices=["sgd", "adadelta"], default=None,
                   help="default: adadelta (lr 1.0) for mnist-cnn, sgd (lr 0.1, momentum 0.9) for wrn")
    p.add_argument("--json", metavar="OUT", help="write the result as JSON (rank 0)")
    p.add_argument("--reference-out", metavar="FILE",
                   help="merge the result into this analysis/report.py --reference file (one entry per GPU count)")
    p.add_argument("--label", help="series label (default: PyTorch <version> <model> <precision> ...)")
    p.add_argument("--time-to-accuracy", metavar="DIR",
                   help="mnist-cnn on the Fashion-MNIST IDX files in DIR (.gz or plain) instead of throughput")
    p.add_argument("--target", type=float, default=0.91, help="time-to-accuracy target test accuracy")
    p.add_argument("--max-epochs", type=int, default=14, help="time-to-accuracy epoch limit")
    p.add_argument("--normalize", default="0.2860,0.3530",
                   help="time-to-accuracy mean,std (scalebench's Fashion-MNIST values; MNIST's are 0.1307,0.3081)")
    p.add_argument("--learn", metavar="DIR|imagefolder:DIR",
                   help="instead of throughput, test accuracy per epoch: DIR trains the wrn on the CIFAR-100 binary "
                        "files in DIR (bench/torch_learning.py); imagefolder:DIR trains --model resnet18 (default), "
                        "resnet34 or resnet50 on DIR/train/CLASS/* and tests on DIR/val/CLASS/* with torchvision's "
                        "reference recipe (bench/torch_image_learning.py)")
    p.add_argument("--epochs", type=int, default=None,
                   help="--learn: training epochs (default 2); --data: epochs, the first untimed (default 3)")
    p.add_argument("--lr", type=float, default=None,
                   help="--learn: SGD learning rate (default 0.01; imagefolder: 0.1, annealed by cosine per step)")
    p.add_argument("--momentum", type=float, default=None, help="--learn: SGD momentum (default 0; imagefolder: 0.9)")
    p.add_argument("--weight-decay", type=float, default=None,
                   help="--learn: SGD weight decay, on every parameter (default 0; imagefolder: 1e-4)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--profile-kernels", type=int, default=0, metavar="STEPS",
                   help="after timing, profile STEPS more steps with torch.profiler and print the GPU time per "
                        "step of each kernel kind (convolution forward, dgrad, wgrad, fused, ...) and the top kernels")
    add_image_options(p)
    args = p.parse_args(argv)
    check_learning_options(p, args)
    if args.epochs is None:
        args.epochs = 3 if args.data else 2
    if args.epochs < 1 or (args.data and not args.io and args.epochs < 2):
        p.error("--epochs must be positive (at least 2 with --data: the first is not timed)")
    if args.time_to_accuracy and args.model not in (None, "mnist-cnn"):
        p.error("--time-to-accuracy trains mnist-cnn; leave --model out")
    check_image_options(p, args)
    if args.model is None:
        args.model = "mnist-cnn" if args.time_to_accuracy else "wrn"
    if args.batch_size is None:
        args.batch_size = 64 if args.model == "mnist-cnn" else 256
    if args.optimizer is None:
        args.optimizer = "adadelta" if args.model == "mnist-cnn" else "sgd"
    if args.compile_mode and not args.compile:
        p.error("--compile-mode needs --compile")
    if args.batch_size < 1 or args.steps < 1 or args.warmup < 0:
        p.error("--batch-size and --steps must be positive, --warmup not negative")
    args.listed = listed[args.model]
    if args.data and not args.io and args.listed["input"][0] != 3:
        p.error(f"--data imagefolder: decodes RGB images; --model {args.model} takes "
                f"{args.listed['input'][0]} channel(s) (e.g. --model resnet50)")
    return args

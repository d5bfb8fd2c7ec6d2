"""The learning check of bench/pytorch_reference.py --learn DIR: the WideResNet trained on a CIFAR-100
binary folder (train.bin, test.bin; e.g. Fashion-MNIST written by bench/fashion_mnist_as_cifar100.py)
with SGD (plain unless --momentum or --weight-decay), GPU-resident tensors, the same preprocessing as scalebench's cifar100 reader (x/255,
then CIFAR-100's per-channel mean and std) and no augmentation (scalebench's default). It reports the
test accuracy after every epoch, to compare with `scalebench train --model wrn --data cifar100:DIR` at the
same recipe and seeds. The precision and the training step are shared with the
image-folder check (bench/torch_image_learning.py).
"""
import contextlib
import os
import time

import torch

import sb_torch_models as models

CIFAR100_MEAN = (0.5071, 0.4865, 0.4409)
CIFAR100_STD = (0.2673, 0.2564, 0.2762)
RECORD = 2 + 3 * 32 * 32  # coarse label, fine label, red, green and blue planes


def load_split(path, device, channels_last):
    with open(path, "rb") as f:
        data = f.read()
    if not data or len(data) % RECORD:
        raise SystemExit(f"{path} is not a whole number of {RECORD}-byte CIFAR-100 records")
    rows = torch.frombuffer(bytearray(data), dtype=torch.uint8).reshape(-1, RECORD)
    labels = rows[:, 1].long().to(device)
    images = rows[:, 2:].reshape(-1, 3, 32, 32).to(device).float() / 255.0
    mean = torch.tensor(CIFAR100_MEAN, device=device).view(1, 3, 1, 1)
    std = torch.tensor(CIFAR100_STD, device=device).view(1, 3, 1, 1)
    images = (images - mean) / std
    if channels_last:
        images = images.contiguous(memory_format=torch.channels_last)
    return images, labels


class Precision:
    """--precision as AMP: autocast to fp16 or bf16 (a no-op for fp32), GradScaler for fp16 only."""

    def __init__(self, precision):
        self.dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(precision)
        self.scaler = torch.amp.GradScaler("cuda", enabled=precision == "fp16")

    def autocast(self):
        return torch.autocast("cuda", dtype=self.dtype) if self.dtype else contextlib.nullcontext()

    def train_step(self, net, optimizer, loss_fn, x, y):
        optimizer.zero_grad(set_to_none=True)
        with self.autocast():
            loss = loss_fn(net(x), y)
        self.scaler.scale(loss).backward()
        self.scaler.step(optimizer)
        self.scaler.update()
        return loss


def sgd(args, model):
    """SGD with --lr, --momentum and --weight-decay on every parameter (scalebench decays its whole flat
    parameter buffer, batch-norm weights and biases included)."""
    return torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum, weight_decay=args.weight_decay)


def learn(args, log):
    device = torch.device("cuda", torch.cuda.current_device())
    torch.manual_seed(args.seed)
    torch.backends.cudnn.benchmark = True
    train_x, train_y = load_split(os.path.join(args.learn, "train.bin"), device, args.channels_last)
    test_x, test_y = load_split(os.path.join(args.learn, "test.bin"), device, args.channels_last)
    model = models.build("wrn", 3, 32, 32, 100).to(device)
    if args.channels_last:
        model = model.to(memory_format=torch.channels_last)
    optimizer = sgd(args, model)
    net = torch.compile(model, mode=args.compile_mode) if args.compile else model
    precision = Precision(args.precision)
    generator = torch.Generator(device=device).manual_seed(args.seed)
    history, start = [], time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        net.train()
        order = torch.randperm(train_x.shape[0], device=device, generator=generator)
        for begin in range(0, train_x.shape[0], args.batch_size):
            idx = order[begin:begin + args.batch_size]
            precision.train_step(net, optimizer, models.loss_fn("wrn"), train_x[idx], train_y[idx])
        net.eval()
        correct = 0
        with torch.no_grad(), precision.autocast():
            for begin in range(0, test_x.shape[0], 1000):
                correct += int((net(test_x[begin:begin + 1000]).argmax(1) == test_y[begin:begin + 1000]).sum())
        accuracy = correct / test_x.shape[0]
        history.append({"epoch": epoch, "seconds": time.perf_counter() - start, "test_accuracy": accuracy})
        log(f"epoch {epoch}: test accuracy {accuracy:.4f}")
    result = {"label": args.label or f"PyTorch {torch.__version__.split('+')[0]} wrn SGD lr {args.lr}"
                                      f" momentum {args.momentum} batch {args.batch_size} {args.precision}",
              "model": "wrn", "mode": "learn", "data": args.learn, "seed": args.seed, "epochs": args.epochs,
              "lr": args.lr, "momentum": args.momentum, "weight_decay": args.weight_decay,
              "batch_size": args.batch_size, "precision": args.precision,
              "test_accuracy": history[-1]["test_accuracy"], "history": history,
              "device": torch.cuda.get_device_name(device), "torch_version": torch.__version__}
    return result

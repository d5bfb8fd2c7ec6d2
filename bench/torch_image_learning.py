"""The learning check of bench/pytorch_reference.py --learn imagefolder:DIR: torchvision's resnet18 (or
resnet34, resnet50) trained on DIR/train/CLASS/* and tested on DIR/val/CLASS/* after every epoch, with
torchvision's ImageNet reference recipe as scalebench's `--model resnet18 --data imagefolder:DIR` applies it
(docs/optimizers.md, "Default recipes"; docs/image_data.md, "The batches"):

  listing     scalebench's (bench/image_folder_layout.py): train/'s classes numbered by name, val/ by train/'s
  training    RandomResizedCrop(--image-size, scale 0.08-1, ratio 3/4-4/3, antialiased bilinear) and
              RandomHorizontalFlip, then ImageNet's mean and std; decoded in the DataLoader's workers
              (bench/torch_image_pipeline.py); shuffled every epoch, the last, shorter batch kept
  evaluation  Resize(shorter side to 256/224 of --image-size, antialiased) and CenterCrop(--image-size),
              the whole val/ split in batches of 256
  optimizer   SGD (--lr 0.1, --momentum 0.9, --weight-decay 1e-4 on every parameter, batch-norm and biases
              included), cross-entropy without label smoothing, the rate annealed by cosine to 0 once per
              step over the run: step s of T = epochs x steps per epoch takes lr (1 + cos(pi s / T)) / 2
The precision (AMP autocast, GradScaler for fp16), the training step and the result's shape are
bench/torch_learning.py's; each epoch's training and evaluation seconds are added to it.
"""
import math
import time

import torch
from torch.utils.data import Dataset
from torchvision.io import read_file
from torchvision.transforms import v2

import sb_torch_models as models
import torch_image_pipeline as pipeline
from torch_learning import Precision, sgd

EVAL_BATCH = 256  # the recipe's --eval-batch-size: evaluation at the training batch, as the reference's


def val_resize_for(image_size):
    """scalebench's evaluation resize (src/data/image_data_sets.h): 256 for 224, the same ratio rounded down."""
    return image_size * 256 // 224


class DecodeAndCentreCrop:
    """Evaluation's per-sample transform in a worker: bytes in, the normalised centre crop out."""

    def __init__(self, size):
        self.transform = v2.Compose([v2.Resize(val_resize_for(size), antialias=True), v2.CenterCrop(size),
                                     pipeline.to_normalised_float()])

    def __call__(self, data):
        return self.transform(pipeline.decode_on_cpu(data))


class ListedImages(Dataset):
    """(path, label) pairs as image_folder_layout lists them; each sample the transformed file and its label."""

    def __init__(self, samples, transform):
        self.samples, self.transform = samples, transform

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, index):
        path, label = self.samples[index]
        return self.transform(read_file(path)), label


def cosine_per_step(optimizer, total_steps):
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: (1 + math.cos(math.pi * s / total_steps)) / 2)


def evaluate(net, loader, precision, device, memory_format):
    correct = torch.zeros((), dtype=torch.int64, device=device)
    with torch.no_grad(), precision.autocast():
        for x, y in loader:
            x = x.to(device, non_blocking=True).contiguous(memory_format=memory_format)
            correct += (net(x).argmax(1) == y.to(device, non_blocking=True)).sum()
    return int(correct) / len(loader.dataset)


def learn(args, log):
    device = torch.device("cuda", torch.cuda.current_device())
    torch.manual_seed(args.seed)  # the weights, the shuffling and the workers' augmentation seeds
    torch.backends.cudnn.benchmark = True
    classes, train_files, val_files = args.learn_listing
    workers, size = args.worker_counts[0], args.image_size
    train = pipeline.make_loader(ListedImages(train_files, pipeline.DecodeAndAugment(size)), "cpu", workers,
                                 args.batch_size, args.prefetch_factor, drop_last=False)
    val = pipeline.make_loader(ListedImages(val_files, DecodeAndCentreCrop(size)), "cpu", workers, EVAL_BATCH,
                               args.prefetch_factor, sampler=range(len(val_files)), drop_last=False)
    memory_format = torch.channels_last if args.channels_last else torch.contiguous_format
    model = models.build(args.model, 3, size, size, len(classes)).to(device, memory_format=memory_format)
    optimizer = sgd(args, model)
    schedule = cosine_per_step(optimizer, args.epochs * len(train))
    net = torch.compile(model, mode=args.compile_mode) if args.compile else model
    precision, loss_fn = Precision(args.precision), models.loss_fn(args.model)
    log(f"# {args.model} on {args.learn}: {len(classes)} classes, {len(train_files)} train and {len(val_files)} val "
        f"images, {len(train)} steps an epoch, {workers} workers, {size} px crops, {args.precision}"
        f"{', channels_last' if args.channels_last else ''}{', compile' if args.compile else ''}, "
        f"{torch.cuda.get_device_name(device)}, torch {torch.__version__}")
    history, start = [], time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        torch.cuda.synchronize()
        began = time.perf_counter()
        net.train()
        loss_sum = torch.zeros((), device=device)
        for x, y in train:
            x = x.to(device, non_blocking=True).contiguous(memory_format=memory_format)
            y = y.to(device, non_blocking=True)
            loss_sum += precision.train_step(net, optimizer, loss_fn, x, y).detach().float() * y.shape[0]
            schedule.step()
        torch.cuda.synchronize()
        trained = time.perf_counter()
        net.eval()
        accuracy = evaluate(net, val, precision, device, memory_format)
        done = time.perf_counter()
        history.append({"epoch": epoch, "seconds": done - start, "test_accuracy": accuracy,
                        "train_loss": float(loss_sum) / len(train_files), "train_seconds": trained - began,
                        "eval_seconds": done - trained})
        log(f"epoch {epoch}: test accuracy {accuracy:.4f}, train loss {history[-1]['train_loss']:.4f}, "
            f"{trained - began:.1f} s training ({len(train_files) / (trained - began):,.0f} img/s), "
            f"{done - trained:.1f} s evaluation")
    result = {"label": args.label or f"PyTorch {torch.__version__.split('+')[0]} {args.model} SGD lr {args.lr}"
                                      f" momentum {args.momentum} weight decay {args.weight_decay} cosine"
                                      f" batch {args.batch_size} {args.precision}",
              "model": args.model, "mode": "learn", "data": f"imagefolder:{args.learn}", "seed": args.seed,
              "epochs": args.epochs, "lr": args.lr, "momentum": args.momentum, "weight_decay": args.weight_decay,
              "scheduler": "cosine", "batch_size": args.batch_size, "eval_batch_size": EVAL_BATCH,
              "precision": args.precision, "channels_last": args.channels_last,
              "compile": (args.compile_mode or "default") if args.compile else False,
              "image_size": size, "val_resize": val_resize_for(size), "workers": workers, "classes": len(classes),
              "train_images": len(train_files), "val_images": len(val_files),
              "test_accuracy": history[-1]["test_accuracy"], "history": history,
              "device": torch.cuda.get_device_name(device), "torch_version": torch.__version__}
    return result

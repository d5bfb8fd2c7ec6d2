"""Training input from image files for bench/pytorch_reference.py (--data imagefolder:DIR, --io), as a
good PyTorch user writes it today, beside scalebench's --data imagefolder:DIR --decode cpu|gpu:

cpu  torchvision.datasets.ImageFolder over DIR/train whose loader reads the file's bytes; in the
     DataLoader's workers torchvision.io.decode_jpeg (decode_image for PNG), then the v2 transforms
     RandomResizedCrop(size, antialias=True), RandomHorizontalFlip, ToDtype(float32, scale=True) and
     Normalize(ImageNet mean, std); pinned batches, uploaded without blocking.
gpu  the workers only read the bytes; the training process decodes the batch with nvJPEG
     (torchvision.io.decode_jpeg(list, device='cuda')), crops and flips each image on the GPU (the crop
     box differs per image), stacks them and converts and normalises the batch there.
"""
import os
import time

import torch
import torchvision
from torch.utils.data import DataLoader, DistributedSampler, Subset
from torchvision.io import ImageReadMode, decode_image, decode_jpeg
from torchvision.transforms import v2

import io_rows

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def is_jpeg(data):
    """By content, never by name (ImageNet's train set holds PNGs named .JPEG)."""
    return data.numel() >= 3 and data[:3].tolist() == [0xFF, 0xD8, 0xFF]


def decode_on_cpu(data):
    if is_jpeg(data):
        return decode_jpeg(data, mode=ImageReadMode.RGB)
    return decode_image(data, mode=ImageReadMode.RGB)


def crop_and_flip(size):
    return v2.Compose([v2.RandomResizedCrop(size, antialias=True), v2.RandomHorizontalFlip()])


def to_normalised_float():
    return v2.Compose([v2.ToDtype(torch.float32, scale=True), v2.Normalize(IMAGENET_MEAN, IMAGENET_STD)])


class DecodeAndAugment:
    """The CPU path's per-sample transform: bytes in, a normalised float32 CHW image out (in a worker)."""

    def __init__(self, size):
        self.transform = v2.Compose([crop_and_flip(size), to_normalised_float()])

    def __call__(self, data):
        return self.transform(decode_on_cpu(data))


def collate_encoded(samples):
    """The GPU path's batch: the files' bytes end to end with their lengths, and the labels. One tensor, not
    one per file: a worker hands each tensor over as a shared-memory file, and hundreds a batch exhaust the
    open-file limit."""
    files = [data for data, _ in samples]
    return (torch.cat(files), torch.tensor([len(data) for data in files])), torch.tensor([label for _, label in samples])


class GpuDecoder:
    """nvJPEG for the batch's JPEGs (a PNG decodes on the CPU and is uploaded), then per image the crop and
    flip on the GPU, then the whole batch converted and normalised."""

    def __init__(self, size, device):
        self.device = device
        self.crop_and_flip = crop_and_flip(size)
        self.normalise = to_normalised_float()

    def __call__(self, batch):
        flat, lengths = batch
        encoded = torch.split(flat, lengths.tolist())
        images = [None] * len(encoded)
        jpegs = [i for i, data in enumerate(encoded) if is_jpeg(data)]
        if jpegs:
            decoded = decode_jpeg([encoded[i] for i in jpegs], device=self.device, mode=ImageReadMode.RGB)
            for i, image in zip(jpegs, decoded):
                images[i] = image
        for i, image in enumerate(images):
            if image is None:
                images[i] = decode_on_cpu(encoded[i]).to(self.device, non_blocking=True)
        return self.normalise(torch.stack([self.crop_and_flip(image) for image in images]))


def image_dataset(folder, decode, size, limit=0):
    """ImageFolder over folder/train: each sample the file's bytes (gpu) or the augmented image (cpu)."""
    train = os.path.join(folder, "train")
    if not os.path.isdir(train):
        raise SystemExit(f"--data imagefolder:{folder}: no train/ folder in it (the layout is DIR/train/CLASS/*; "
                         "scripts/make_image_data.py writes one)")
    dataset = torchvision.datasets.ImageFolder(train, loader=torchvision.io.read_file,
                                               transform=DecodeAndAugment(size) if decode == "cpu" else None)
    if limit and limit < len(dataset):
        return Subset(dataset, range(limit)), dataset
    return dataset, dataset


def make_loader(dataset, decode, workers, batch_size, prefetch_factor, sampler=None, drop_last=True):
    """The DataLoader a good user sets up: workers kept across epochs, prefetching, pinned batches (the
    decoded ones; nvJPEG reads the bytes from pageable memory), the short last batch dropped unless
    drop_last is False."""
    options = {"batch_size": batch_size, "num_workers": workers, "drop_last": drop_last,
               "pin_memory": decode == "cpu", "persistent_workers": workers > 0}
    if workers > 0:
        options["prefetch_factor"] = prefetch_factor
    if decode == "gpu":
        options["collate_fn"] = collate_encoded
    if sampler is None:
        options["shuffle"] = True
    else:
        options["sampler"] = sampler
    return DataLoader(dataset, **options)


class TrainingInput:
    """Batches on the GPU from an image folder, epoch by epoch (one DistributedSampler shard per rank)."""

    def __init__(self, args, device, world, rank):
        self.dataset, folder = image_dataset(args.image_folder, args.decoders[0], args.image_size, args.train_limit)
        self.classes = len(folder.classes)
        self.sampler = DistributedSampler(self.dataset, world, rank, shuffle=True, seed=args.seed,
                                          drop_last=True) if world > 1 else None
        self.loader = make_loader(self.dataset, args.decoders[0], args.worker_counts[0], args.batch_size,
                                  args.prefetch_factor, self.sampler)
        if len(self.loader) < 1:
            raise SystemExit(f"--data {args.data}: {len(self.dataset)} training images make no batch of "
                             f"{args.batch_size} per rank; lower --batch-size or raise --train-limit")
        self.gpu_decoder = GpuDecoder(args.image_size, device) if args.decoders[0] == "gpu" else None
        self.device = device
        self.memory_format = torch.channels_last if args.channels_last else torch.contiguous_format

    def epoch(self, number):
        if self.sampler is not None:
            self.sampler.set_epoch(number)
        for x, y in self.loader:
            x = self.gpu_decoder(x) if self.gpu_decoder else x.to(self.device, non_blocking=True)
            yield x.contiguous(memory_format=self.memory_format), y.to(self.device, non_blocking=True)


def time_epochs(step, source, epochs, log):
    """Trains `epochs` epochs; the first (workers starting, cuDNN's search, compilation) is not timed.
    Returns the mean step time in ms of each later epoch, their seconds and steps, and the details: each
    epoch's time, the time the loop waited for its batches (the host blocked in the loader, GPU decoding's
    launches included) and for its first batch (each epoch starts the pipeline afresh: short epochs pay
    it more often than long ones)."""
    history = []
    for number in range(1, epochs + 1):
        torch.cuda.synchronize()
        begin, waited, steps, first_batch = time.perf_counter(), 0.0, 0, None
        batches = source.epoch(number)
        while True:
            asked = time.perf_counter()
            batch = next(batches, None)
            waited += time.perf_counter() - asked
            if first_batch is None:  # the workers start each epoch's batches only when it begins
                first_batch = waited
            if batch is None:
                break
            step(*batch)
            steps += 1
        torch.cuda.synchronize()
        seconds = time.perf_counter() - begin
        history.append({"epoch": number, "seconds": seconds, "steps": steps, "data_wait_s": waited,
                        "first_batch_wait_s": first_batch})
        log(f"epoch {number}: {steps} steps in {seconds:.3f} s, {steps * source.loader.batch_size / seconds:,.0f} img/s "
            f"per rank, waited {waited:.3f} s for data{' (not timed)' if number == 1 else ''}")
    steady = history[1:]
    step_ms = [1e3 * e["seconds"] / e["steps"] for e in steady]
    seconds, steps = sum(e["seconds"] for e in steady), sum(e["steps"] for e in steady)
    waited = sum(e["data_wait_s"] for e in steady)
    details = {"epochs": history, "data_wait_ms_per_step": 1e3 * waited / steps,
               "data_wait_share": waited / seconds}
    return step_ms, seconds, steps, details


# ------------------------------------------------------------------------------------------ --io

def _batches_until(iterator, count, consume):
    for _ in range(count):
        consume(next(iterator))


def io_row(args, device, decode, workers, dataset, sizes):
    """One configuration of the input pipeline alone: batches on the GPU, nothing trained."""
    warm, timed = io_rows.warmup_and_timed_batches(workers, args.batches)
    generator = torch.Generator().manual_seed(args.seed)
    needed = (warm + timed) * args.batch_size
    order = torch.cat([torch.randperm(len(dataset), generator=generator)
                       for _ in range(-(-needed // len(dataset)))])[:needed].tolist()
    loader = make_loader(dataset, decode, workers, args.batch_size, args.prefetch_factor, sampler=order)
    gpu_decoder = GpuDecoder(args.image_size, device) if decode == "gpu" else None

    def consume(batch):
        x, y = batch
        x = gpu_decoder(x) if gpu_decoder else x.to(device, non_blocking=True)
        y.to(device, non_blocking=True)

    batches = iter(loader)
    _batches_until(batches, warm, consume)
    torch.cuda.synchronize()
    cpu0, t0 = io_rows.process_tree_cpu_seconds(), time.perf_counter()
    _batches_until(batches, timed, consume)
    torch.cuda.synchronize()  # the clock stops when the last batch is on the GPU, decoded
    seconds = time.perf_counter() - t0
    cpu1 = io_rows.process_tree_cpu_seconds()
    del batches, loader  # ends the persistent workers before the next configuration starts its own
    timed_bytes = sum(sizes[i] for i in order[warm * args.batch_size:needed])
    rate = timed * args.batch_size / seconds
    return {"decode": decode, "workers": workers, "images_per_s": rate, "mb_per_s": timed_bytes / seconds / 1e6,
            "busy_cores": None if cpu0 is None or cpu1 is None else (cpu1 - cpu0) / seconds,
            "images_per_s_per_worker": rate / max(workers, 1), "batches": timed, "warmup_batches": warm}


def io_rates(args, device, log):
    """Every --decode and --workers configuration in turn; the rows of `scalebench io`'s table."""
    rows = []
    log(io_rows.format_rows([]))
    for decode in args.decoders:
        dataset, folder = image_dataset(args.image_folder, decode, args.image_size, args.train_limit)
        sizes = [os.path.getsize(path) for path, _ in folder.samples]
        if len(dataset) < args.batch_size:
            raise SystemExit(f"--data {args.data}: {len(dataset)} images make no batch of {args.batch_size}")
        for workers in args.worker_counts:
            rows.append(io_row(args, device, decode, workers, dataset, sizes))
            log(io_rows.format_rows(rows[-1:]).splitlines()[-1])
    return rows


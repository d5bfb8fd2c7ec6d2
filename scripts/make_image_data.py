#!/usr/bin/env python3
"""Writes image folders in torchvision's ImageFolder layout (OUT/train/CLASS/*, OUT/val/CLASS/*) for
scalebench's image input and `scalebench pack`.

    make_image_data.py fashion-mnist OUT [--idx-dir DIR] [--train-per-class N] [--val-per-class N] [--format png|jpg]
    make_image_data.py synthetic OUT --classes K --train-per-class N --val-per-class N [--size PX]
    make_image_data.py imagenet-like OUT --classes K --train-per-class N --val-per-class N [--mixed-formats] [--jobs N]

fashion-mnist  the 28x28 grey Fashion-MNIST images from their IDX files (gzip, Debian's
               dataset-fashion-mnist by default), as PNG (lossless) or JPEG; classes 00_t-shirt ...
               09_ankle-boot, so that sorted names keep Fashion-MNIST's numbers.
synthetic      small images (--size, default 32) of a class-dependent pattern: quick to write and learnable.
imagenet-like  ImageNet-sized JPEGs: 300-640 px a side, natural-looking (smooth gradients, low-frequency
               texture, shapes, mild noise), quality 90, about 70-110 KB each. Learnable: each class has
               its own gradient colours, shape kind, colour and count and fine-texture scale, which every
               picture varies: the classes overlap, and colour statistics, which survive random crops and
               flips, tell them apart. --mixed-formats makes about one
               in eight train images progressive, grey or CMYK (Adobe) JPEGs, or RGB, RGBA or palette PNGs,
               or a PNG named .JPEG, as real datasets hold them. --jobs N writes with N processes (default: the
               cores this process may use); the files are the same for every N.

Everything is deterministic from --seed. OUT must not exist yet (or be empty). Needs Debian's python3-numpy
and python3-pil. Exit codes: 0 done, 2 bad arguments (the message names the option), 1 missing packages.
"""
import argparse
import gzip
import io
import multiprocessing
import os
import struct
import sys

PROG = "make_image_data.py"
FASHION_DIR = "/usr/share/datasets/fashion-mnist"
FASHION_CLASSES = ["t-shirt", "trouser", "pullover", "dress", "coat", "sandal", "shirt", "sneaker", "bag", "ankle-boot"]
MIXED_KINDS = ["progressive", "grey", "cmyk", "png-rgb", "png-rgba", "png-palette", "png-named-jpeg"]


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "analysis"))
import system_python  # noqa: E402

system_python.ensure_packages(PROG, __file__, ("numpy", "PIL"), ("python3-numpy", "python3-pil"))
import numpy as np  # noqa: E402
from PIL import Image, ImageDraw, ImageFilter  # noqa: E402


def fail(message):
    print(f"{PROG}: error: {message}", file=sys.stderr)
    sys.exit(2)


def prepare_out(out):
    if os.path.exists(out) and (not os.path.isdir(out) or os.listdir(out)):
        fail(f"OUT '{out}' exists and is not an empty folder; give a new path (nothing is overwritten)")
    os.makedirs(out, exist_ok=True)


def save(image_bytes, path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "xb") as f:
        f.write(image_bytes)


def encode(image, fmt, **options):
    buf = io.BytesIO()
    image.save(buf, format=fmt, **options)
    return buf.getvalue()


# --- Fashion-MNIST ---------------------------------------------------------------------------------

def read_idx(path, magic):
    try:
        with gzip.open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        fail(f"--idx-dir: cannot read '{path}': {e} (Debian: apt-get install dataset-fashion-mnist)")
    if len(data) < 8 or struct.unpack(">I", data[:4])[0] != magic:
        fail(f"'{path}' is not an IDX file of the expected kind (magic {magic:#x})")
    count = struct.unpack(">I", data[4:8])[0]
    if magic == 0x803:
        rows, cols = struct.unpack(">II", data[8:16])
        return np.frombuffer(data, np.uint8, count * rows * cols, 16).reshape(count, rows, cols)
    return np.frombuffer(data, np.uint8, count, 8)


def fashion_mnist(args):
    prepare_out(args.out)
    for split, prefix in (("train", "train"), ("val", "t10k")):
        images = read_idx(os.path.join(args.idx_dir, f"{prefix}-images-idx3-ubyte.gz"), 0x803)
        labels = read_idx(os.path.join(args.idx_dir, f"{prefix}-labels-idx1-ubyte.gz"), 0x801)
        limit = args.train_per_class if split == "train" else args.val_per_class
        written = [0] * len(FASHION_CLASSES)
        for index, (pixels, label) in enumerate(zip(images, labels)):
            if limit is not None and written[label] >= limit:
                continue
            written[label] += 1
            image = Image.fromarray(pixels, "L")
            data = encode(image, "PNG") if args.format == "png" else encode(image, "JPEG", quality=95)
            name = f"{label:02d}_{FASHION_CLASSES[label]}"
            save(data, os.path.join(args.out, split, name, f"{index:05d}.{args.format}"))
        print(f"{split}: {sum(written)} images")


# --- synthetic ---------------------------------------------------------------------------------------

def synthetic_image(rng, label, classes, size):
    """A class-dependent stripe orientation and colour, with noise: learnable, and cheap to write."""
    angle = np.pi * label / classes
    y, x = np.mgrid[0:size, 0:size].astype(np.float32)
    stripes = np.sin((x * np.cos(angle) + y * np.sin(angle)) * (0.5 + rng.uniform(-0.05, 0.05)) + rng.uniform(0, 6.3))
    hue = np.array([np.cos(angle), np.cos(angle + 2.1), np.cos(angle + 4.2)], np.float32)
    pixels = 128 + 60 * stripes[..., None] * hue + rng.normal(0, 12, (size, size, 3))
    return Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8), "RGB")


def synthetic(args):
    prepare_out(args.out)
    for split_id, (split, count) in enumerate((("train", args.train_per_class), ("val", args.val_per_class))):
        for label in range(args.classes):
            for i in range(count):
                rng = np.random.default_rng([args.seed, split_id, label, i])
                data = encode(synthetic_image(rng, label, args.classes, args.size), "JPEG", quality=90)
                save(data, os.path.join(args.out, split, f"class{label:04d}", f"{i:06d}.jpg"))
    print(f"{args.classes} classes: {args.classes * args.train_per_class} train and "
          f"{args.classes * args.val_per_class} val images")


# --- ImageNet-like -----------------------------------------------------------------------------------

def smooth_field(rng, width, height, cells, amplitude):
    """Low-frequency texture: a coarse random grid upsampled bicubically, per channel."""
    grid = rng.uniform(-amplitude, amplitude, (cells, cells, 3)).astype(np.float32)
    layers = [np.asarray(Image.fromarray(grid[..., c], "F").resize((width, height), Image.BICUBIC)) for c in range(3)]
    return np.stack(layers, axis=-1)


SHAPE_KINDS = ("ellipse", "rectangle", "triangle")
COLOUR_JITTER = 20.0  # the spread of a picture's colours around its class's (0-255 units)


def class_style(seed, label):
    """What every picture of a class shares: its gradient's two colours, its shapes' colour, kind and count,
    and the scale of its fine texture. Colour statistics survive a random crop and a flip, so a network can
    learn the class from them; each picture varies them (natural_image), so that classes overlap."""
    rng = np.random.default_rng([seed, 2000, label])
    return {"c0": rng.uniform(40, 215, 3), "c1": rng.uniform(40, 215, 3), "shape_colour": rng.uniform(20, 235, 3),
            "shape_kind": int(rng.integers(0, len(SHAPE_KINDS))), "shapes": int(rng.integers(2, 8)),
            "texture_cells": int(rng.choice([12, 24, 48, 96]))}


def draw_shape(draw, rng, kind, colour, width, height):
    x0, y0 = rng.uniform(0, width), rng.uniform(0, height)
    w, h = rng.uniform(20, width / 2), rng.uniform(20, height / 2)
    colour = tuple(int(v) for v in np.clip(colour, 0, 255))
    if kind == "ellipse":
        draw.ellipse([x0, y0, x0 + w, y0 + h], fill=colour)
    elif kind == "rectangle":
        draw.rectangle([x0, y0, x0 + w, y0 + h], fill=colour)
    else:
        draw.polygon([(x0, y0), (x0 + w, y0 + rng.uniform(0, h)), (x0 + rng.uniform(0, w), y0 + h)], fill=colour)


def natural_image(rng, width, height, style):
    """Smooth gradients, textures at two scales, a few blurred shapes: compresses like a photograph. The
    class's style sets the colours, the shapes and the fine texture's scale, each drawn around it; one
    shape in four is a distractor of any kind and colour."""
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    angle = rng.uniform(0, 2 * np.pi)
    t = (x * np.cos(angle) + y * np.sin(angle)) / max(width, height)
    c0 = style["c0"] + rng.normal(0, COLOUR_JITTER, 3)
    c1 = style["c1"] + rng.normal(0, COLOUR_JITTER, 3)
    base = c0 + (c1 - c0) * t[..., None]
    base += smooth_field(rng, width, height, 6, 35) + smooth_field(rng, width, height, style["texture_cells"], 18)
    image = Image.fromarray(np.clip(base, 0, 255).astype(np.uint8), "RGB")
    draw = ImageDraw.Draw(image)
    for _ in range(style["shapes"] + int(rng.integers(-1, 2))):
        if rng.uniform() < 0.75:
            kind, colour = SHAPE_KINDS[style["shape_kind"]], style["shape_colour"] + rng.normal(0, COLOUR_JITTER, 3)
        else:
            kind, colour = SHAPE_KINDS[int(rng.integers(0, len(SHAPE_KINDS)))], rng.uniform(0, 256, 3)
        draw_shape(draw, rng, kind, colour, width, height)
    return image.filter(ImageFilter.GaussianBlur(1.2))


def with_noise(image, rng, sigma):
    pixels = np.asarray(image, np.float32) + rng.normal(0, sigma, (image.height, image.width, 3))
    return Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8), "RGB")


def imagenet_like_jpeg(rng, target_bytes, style):
    """A JPEG of about target_bytes: the fine noise's strength is searched (a few encodes) to reach it."""
    width, height = (int(v) for v in rng.integers(300, 641, 2))
    clean = natural_image(rng, width, height, style)
    noise = rng.normal(0, 1, (height, width, 3)).astype(np.float32)
    low, high, sigma = 0.0, 24.0, 4.0
    best = None
    for _ in range(6):
        pixels = np.clip(np.asarray(clean, np.float32) + sigma * noise, 0, 255).astype(np.uint8)
        image = Image.fromarray(pixels, "RGB")
        data = encode(image, "JPEG", quality=90)
        if best is None or abs(len(data) - target_bytes) < abs(len(best[1]) - target_bytes):
            best = (image, data)
        if abs(len(data) - target_bytes) < 0.08 * target_bytes:
            break
        low, high = (sigma, high) if len(data) < target_bytes else (low, sigma)
        sigma = (low + high) / 2
    return best


def mixed_format(image, kind):
    """(bytes, extension) of one of the unusual files real datasets hold."""
    if kind == "progressive":
        return encode(image, "JPEG", quality=90, progressive=True), "jpg"
    if kind == "grey":
        return encode(image.convert("L"), "JPEG", quality=90), "jpg"
    if kind == "cmyk":
        return encode(image.convert("CMYK"), "JPEG", quality=90), "jpg"  # PIL writes Adobe's inverted CMYK
    if kind == "png-rgb":
        return encode(image, "PNG"), "png"
    if kind == "png-rgba":
        rgba = image.convert("RGBA")
        rgba.putalpha(Image.linear_gradient("L").resize(image.size))
        return encode(rgba, "PNG"), "png"
    if kind == "png-palette":
        return encode(image.convert("P", palette=Image.ADAPTIVE, colors=64), "PNG"), "png"
    return encode(image, "PNG"), "JPEG"  # png-named-jpeg: a PNG behind a .JPEG name, as in ImageNet's train set


def imagenet_like_tasks(args):
    """(split, label, index, unusual kind or None) of every file, in the order a single process writes them:
    the unusual kinds go round in that order, so the output does not depend on --jobs."""
    tasks, mixed = [], 0
    for split, count in (("train", args.train_per_class), ("val", args.val_per_class)):
        for label in range(args.classes):
            for i in range(count):
                kind = None
                if args.mixed_formats and split == "train" and i % 8 == 7:
                    kind = MIXED_KINDS[mixed % len(MIXED_KINDS)]
                    mixed += 1
                tasks.append((split, label, i, kind))
    return tasks


def write_imagenet_like(task, out, seed):
    """Writes one file; returns (bytes written, unusual kind or None)."""
    split, label, i, kind = task
    rng = np.random.default_rng([seed, 1000 + ("train", "val").index(split), label, i])
    image, data = imagenet_like_jpeg(rng, rng.uniform(70_000, 110_000), class_style(seed, label))
    ext = "JPEG"
    if kind is not None:
        data, ext = mixed_format(image, kind)
    save(data, os.path.join(out, split, f"n{label:08d}", f"{split}_{label:04d}_{i:06d}.{ext}"))
    return len(data), kind


def _write_imagenet_like_star(job):
    return write_imagenet_like(*job)


def imagenet_like(args):
    prepare_out(args.out)
    tasks = imagenet_like_tasks(args)
    jobs = [(task, args.out, args.seed) for task in tasks]
    if args.jobs > 1:
        with multiprocessing.Pool(args.jobs) as pool:
            written = pool.map(_write_imagenet_like_star, jobs, chunksize=16)
    else:
        written = [write_imagenet_like(*job) for job in jobs]
    total = sum(size for size, _ in written)
    counts = {}
    for _, kind in written:
        if kind is not None:
            counts[kind] = counts.get(kind, 0) + 1
    print(f"{len(tasks)} images, {total / max(len(tasks), 1) / 1000:.1f} KB on average"
          + (f"; unusual formats: {counts}" if counts else ""))


# --- command line ------------------------------------------------------------------------------------

def positive(name):
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            value = 0
        if value < 1:
            raise argparse.ArgumentTypeError(f"{name} '{text}': expected a whole number >= 1")
        return value
    return parse


def main():
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="kind", required=True)
    fm = sub.add_parser("fashion-mnist", help="Fashion-MNIST's IDX files as an image folder")
    fm.add_argument("out")
    fm.add_argument("--idx-dir", default=FASHION_DIR, help=f"the folder of the four .gz IDX files (default {FASHION_DIR})")
    fm.add_argument("--train-per-class", type=positive("--train-per-class"), help="at most N per class (default all)")
    fm.add_argument("--val-per-class", type=positive("--val-per-class"), help="at most N per class (default all)")
    fm.add_argument("--format", choices=("png", "jpg"), default="png")
    for name, helptext in (("synthetic", "small generated images, learnable"),
                           ("imagenet-like", "ImageNet-sized natural-looking JPEGs of class-dependent content")):
        p = sub.add_parser(name, help=helptext)
        p.add_argument("out")
        p.add_argument("--classes", type=positive("--classes"), required=True)
        p.add_argument("--train-per-class", type=positive("--train-per-class"), required=True)
        p.add_argument("--val-per-class", type=positive("--val-per-class"), required=True)
        p.add_argument("--seed", type=int, default=0)
        if name == "synthetic":
            p.add_argument("--size", type=positive("--size"), default=32, help="pixels a side (default 32)")
        else:
            p.add_argument("--mixed-formats", action="store_true",
                           help="about 1 in 8 train images progressive/grey/CMYK JPEG or RGB/RGBA/palette PNG")
            p.add_argument("--jobs", type=positive("--jobs"), default=len(os.sched_getaffinity(0)),
                           help="processes writing images (default: this process's cores); the files do not depend on it")
    args = parser.parse_args()
    {"fashion-mnist": fashion_mnist, "synthetic": synthetic, "imagenet-like": imagenet_like}[args.kind](args)


if __name__ == "__main__":
    main()

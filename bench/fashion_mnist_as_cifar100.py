#!/usr/bin/env python3
"""Writes Fashion-MNIST in the CIFAR-100 binary format, so that the WideResNet (a CIFAR model) can be
trained on real data that every GPU node has, by scalebench (--data cifar100:OUT) and by PyTorch
(bench/pytorch_reference.py --learn OUT) alike.

    python3 bench/fashion_mnist_as_cifar100.py /usr/share/datasets/fashion-mnist OUT

Each 28x28 grey image is padded with 2 black pixels on every side to 32x32 and repeated on the three
colour planes. A record is the coarse label byte, the fine label byte (both the class, 0-9) and the
3072 pixel bytes (red, green, blue planes), as in CIFAR-100's train.bin and test.bin. Only the standard
library is used.
"""
import os
import sys

from idx_files import read_idx

SIDE, PAD = 32, 2


def records(images_path, labels_path):
    hint = "give the folder of the Fashion-MNIST IDX files"
    (count, rows, cols), pixels = read_idx(images_path, hint)
    (label_count,), labels = read_idx(labels_path, hint)
    if label_count != count or rows + 2 * PAD != SIDE or cols + 2 * PAD != SIDE:
        raise SystemExit(f"{images_path}: {count} images of {rows}x{cols} with {label_count} labels; "
                         f"expected 28x28 images, one label each")
    blank = bytes(SIDE * PAD)
    for i in range(count):
        image = pixels[i * rows * cols:(i + 1) * rows * cols]
        plane = bytearray(blank)
        for r in range(rows):
            plane += bytes(PAD) + image[r * cols:(r + 1) * cols] + bytes(PAD)
        plane += blank
        yield bytes((labels[i], labels[i])) + bytes(plane) * 3


def main(argv):
    if len(argv) != 3:
        raise SystemExit(__doc__)
    source, out = argv[1], argv[2]
    os.makedirs(out, exist_ok=True)
    for prefix, name in (("train", "train.bin"), ("t10k", "test.bin")):
        target = os.path.join(out, name)
        tmp = target + ".tmp"
        with open(tmp, "wb") as f:
            for record in records(os.path.join(source, f"{prefix}-images-idx3-ubyte"),
                                  os.path.join(source, f"{prefix}-labels-idx1-ubyte")):
                f.write(record)
        os.replace(tmp, target)  # never a half-written file under the final name
        print(f"{target}: {os.path.getsize(target) // (2 + 3 * SIDE * SIDE)} records")


if __name__ == "__main__":
    main(sys.argv)

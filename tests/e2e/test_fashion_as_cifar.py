#!/usr/bin/env python3
"""bench/fashion_mnist_as_cifar100.py writes CIFAR-100 records that scalebench's cifar100 reader takes:
every byte where the format puts it (labels, 2-pixel black border, three equal planes), and a run that
trains on them."""
import gzip
import os
import re
import subprocess
import sys
import unittest

from e2e_util import run_scalebench, temp_dir

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
CONVERTER = os.path.join(ROOT, "bench", "fashion_mnist_as_cifar100.py")


def write_idx(path, dims, body):
    header = bytes((0, 0, 8, len(dims))) + b"".join(d.to_bytes(4, "big") for d in dims)
    with gzip.open(path + ".gz", "wb") as f:
        f.write(header + bytes(body))


def image(i):
    """A 28x28 image whose every pixel tells its position and image: (i*7 + r*3 + c) mod 251 + 1 (never 0)."""
    return [(i * 7 + r * 3 + c) % 251 + 1 for r in range(28) for c in range(28)]


class FashionAsCifarTest(unittest.TestCase):
    def make_source(self, folder, counts):
        for prefix, count in counts.items():
            write_idx(os.path.join(folder, f"{prefix}-images-idx3-ubyte"), [count, 28, 28],
                      [p for i in range(count) for p in image(i)])
            write_idx(os.path.join(folder, f"{prefix}-labels-idx1-ubyte"), [count], [i % 10 for i in range(count)])

    def test_records_and_training(self):
        with temp_dir() as tmp:
            source, out = os.path.join(tmp, "idx"), os.path.join(tmp, "cifar")
            os.makedirs(source)
            self.make_source(source, {"train": 64, "t10k": 16})
            subprocess.run([sys.executable, CONVERTER, source, out], check=True, capture_output=True, text=True)
            with open(os.path.join(out, "train.bin"), "rb") as f:
                data = f.read()
            record = 2 + 3 * 1024
            self.assertEqual(len(data), 64 * record)
            for i in (0, 5, 63):
                r = data[i * record:(i + 1) * record]
                self.assertEqual((r[0], r[1]), (i % 10, i % 10))
                planes = [r[2 + k * 1024: 2 + (k + 1) * 1024] for k in range(3)]
                self.assertEqual(planes[0], planes[1])
                self.assertEqual(planes[0], planes[2])
                expected = image(i)
                for y in range(32):
                    for x in range(32):
                        inside = 2 <= y < 30 and 2 <= x < 30
                        want = expected[(y - 2) * 28 + (x - 2)] if inside else 0
                        self.assertEqual(planes[0][y * 32 + x], want, f"image {i} pixel ({y}, {x})")
            self.assertEqual(os.path.getsize(os.path.join(out, "test.bin")), 16 * record)

            run = run_scalebench(1, "train", "--device", "cpu", "--model", "mlp", "--data", f"cifar100:{out}",
                                 "--epochs", "1", "--batch-size", "16", "--eval-batch-size", "16")
            self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
            self.assertRegex(run.stdout, re.compile(r"^epoch\s+1/1", re.M))

    def test_wrong_image_size_is_refused(self):
        with temp_dir() as tmp:
            source = os.path.join(tmp, "idx")
            os.makedirs(source)
            write_idx(os.path.join(source, "train-images-idx3-ubyte"), [2, 30, 30], [0] * 1800)
            write_idx(os.path.join(source, "train-labels-idx1-ubyte"), [2], [0, 1])
            run = subprocess.run([sys.executable, CONVERTER, source, os.path.join(tmp, "out")],
                                 capture_output=True, text=True)
            self.assertNotEqual(run.returncode, 0)
            self.assertIn("expected 28x28 images", run.stderr)
            self.assertFalse(os.path.exists(os.path.join(tmp, "out", "train.bin")))


if __name__ == "__main__":
    unittest.main(verbosity=2)

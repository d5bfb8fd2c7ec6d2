"""IDX files (MNIST, Fashion-MNIST) of unsigned bytes, .gz or plain, with the standard library only: used by
bench/pytorch_reference.py and bench/fashion_mnist_as_cifar100.py."""
import gzip
import os


def read_idx(path, hint):
    """(dims, body bytes) of PATH[.gz]; exits with a message ending in HINT when the file is missing or not
    an IDX file of unsigned bytes."""
    for candidate in (path + ".gz", path):
        if os.path.exists(candidate):
            opener = gzip.open if candidate.endswith(".gz") else open
            with opener(candidate, "rb") as f:
                data = f.read()
            break
    else:
        raise SystemExit(f"no {path}[.gz]: {hint}")
    if len(data) < 4 or data[:3] != b"\0\0\x08":
        raise SystemExit(f"{candidate} is not an IDX file of unsigned bytes")
    dims = [int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(data[3])]
    body = data[4 + 4 * len(dims):]
    expected = 1
    for d in dims:
        expected *= d
    if len(body) != expected:
        raise SystemExit(f"{candidate} holds {len(body)} bytes after its header, not {expected}")
    return dims, body

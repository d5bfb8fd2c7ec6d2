// MNIST and Fashion-MNIST: four IDX files in one directory, each plain or gzip-compressed.
#pragma once
#include <string>

#include "data/dataset.h"

namespace sb {

enum class MnistKind { Mnist, FashionMnist };

// Where Debian's dataset-fashion-mnist package installs the files.
inline constexpr const char* kFashionMnistDefaultDir = "/usr/share/datasets/fashion-mnist";

// Loads train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte and
// t10k-labels-idx1-ubyte (each also as .gz) from dir. An empty dir means the default directory for
// Fashion-MNIST (MNIST has none). Mean/std: MNIST (0.1307, 0.3081) as in PyTorch's MNIST example,
// Fashion-MNIST (0.2860, 0.3530).
TrainTest load_mnist_like(const std::string& dir, MnistKind kind);

}  // namespace sb

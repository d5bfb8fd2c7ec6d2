// MNIST and Fashion-MNIST: four IDX files in one directory, each plain or gzip-compressed.
#pragma once
#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/parallel_decode.h"

namespace sb {

enum class MnistKind { Mnist, FashionMnist };

// Where Debian's dataset-fashion-mnist package installs the files.
inline constexpr const char* kFashionMnistDefaultDir = "/usr/share/datasets/fashion-mnist";

// The four files of a data set, each the plain or the .gz one.
struct MnistFiles {
  std::string train_images, train_labels, test_images, test_labels;
  std::vector<std::string> all() const { return {train_images, train_labels, test_images, test_labels}; }
};

// Finds train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte and
// t10k-labels-idx1-ubyte (each also as .gz) in dir. An empty dir means the default directory for
// Fashion-MNIST (MNIST has none).
MnistFiles find_mnist_files(const std::string& dir, MnistKind kind);

// Decodes the four files (at once with Decode::Parallel). Mean/std: MNIST (0.1307, 0.3081) as in
// PyTorch's MNIST example, Fashion-MNIST (0.2860, 0.3530).
TrainTest read_mnist_files(const MnistFiles& files, MnistKind kind, Decode decode = Decode::Parallel);

// find_mnist_files, then read_mnist_files.
TrainTest load_mnist_like(const std::string& dir, MnistKind kind);

}  // namespace sb

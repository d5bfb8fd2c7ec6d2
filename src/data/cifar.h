// CIFAR-10 and CIFAR-100 in their binary versions (https://www.cs.toronto.edu/~kriz/cifar.html).
// A record is the label byte(s) then 3072 pixel bytes: 1024 red, 1024 green, 1024 blue, each 32x32
// row-major, which is already our C x H x W order.
#pragma once
#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/parallel_decode.h"

namespace sb {

// cifar-10-batches-bin: data_batch_1.bin .. data_batch_5.bin and test_batch.bin; a record is
// 1 label byte (0..9) + 3072 bytes. dir may be that directory or the one that contains it.
// Mean (0.4914, 0.4822, 0.4465), std (0.2470, 0.2435, 0.2616).
TrainTest load_cifar10(const std::string& dir);

// cifar-100-binary: train.bin and test.bin; a record is 1 coarse label byte (0..19), 1 fine label
// byte (0..99) + 3072 bytes. We train on the fine labels. dir may be that directory or its parent.
// Mean (0.5071, 0.4865, 0.4409), std (0.2673, 0.2564, 0.2762).
TrainTest load_cifar100(const std::string& dir);

enum class CifarKind { Cifar10, Cifar100 };

// The files of a data set: the training files in record order, then the test file.
struct CifarFiles {
  std::vector<std::string> train, test;
  std::vector<std::string> all() const {
    std::vector<std::string> paths = train;
    paths.insert(paths.end(), test.begin(), test.end());
    return paths;
  }
};

// The files under dir (or its data set's subfolder), as load_cifar10 and load_cifar100 read them.
CifarFiles find_cifar_files(const std::string& dir, CifarKind kind);
// Decodes the files (at once with Decode::Parallel), each file's records in file order.
TrainTest read_cifar_files(const CifarFiles& files, CifarKind kind, Decode decode = Decode::Parallel);

}  // namespace sb

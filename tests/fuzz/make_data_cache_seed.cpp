// Writes small valid decoded-data cache files through sb::encode_data_cache (the writer scalebench
// uses), each prefixed with a mode byte of fuzz_data_cache_reader, as that target's seed corpus.
//   make_data_cache_seed OUT_DIR
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "data/data_cache.h"

namespace {

using namespace sb;

Dataset split(const char* name, int channels, int side, int classes, int count) {
  Dataset d;
  d.name = name;
  d.channels = channels;
  d.height = side;
  d.width = side;
  d.num_classes = classes;
  d.mean.assign(static_cast<size_t>(channels), 0.5f);
  d.std.assign(static_cast<size_t>(channels), 0.25f);
  for (int i = 0; i < count; ++i) d.labels.push_back(i % classes);
  d.images.resize(static_cast<size_t>(count) * static_cast<size_t>(d.sample_bytes()));
  for (size_t i = 0; i < d.images.size(); ++i) d.images[i] = static_cast<uint8_t>(i * 37);
  return d;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_data_cache_seed OUT_DIR\n");
    return 2;
  }
  const std::filesystem::path dir(argv[1]);
  std::filesystem::create_directories(dir);
  const TrainTest gray{split("fashion-mnist/train", 1, 4, 10, 3), split("fashion-mnist/test", 1, 4, 10, 2)};
  const TrainTest color{split("cifar10/train", 3, 2, 10, 2), split("cifar10/test", 3, 2, 10, 1)};
  const std::string key = "fashion-mnist\n/data/train-images-idx3-ubyte.gz\t100\t1700000000000000000\t0123abcd\n";
  for (uint8_t mode = 0; mode < 4; ++mode) {
    for (const auto& [name, data] : {std::pair{"gray", gray}, std::pair{"color", color}}) {
      const std::vector<uint8_t> bytes = encode_data_cache(key, data);
      const std::filesystem::path path = dir / (std::string(name) + "_mode" + std::to_string(mode));
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      out.put(static_cast<char>(mode));
      out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
      if (!out) {
        std::fprintf(stderr, "make_data_cache_seed: cannot write %s\n", path.c_str());
        return 1;
      }
    }
  }
  return 0;
}

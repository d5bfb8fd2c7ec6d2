// Writes the seed corpora of the IDX and CIFAR fuzz targets: small valid files in each of the modes
// their first byte selects (see fuzz_idx_reader.cpp and fuzz_cifar_reader.cpp), and the one seed of
// fuzz_checkpoint_fields.
//   make_seeds OUT_DIR  ->  OUT_DIR/fuzz_idx_reader/*, OUT_DIR/fuzz_cifar_reader/*, OUT_DIR/fuzz_checkpoint_fields/*
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

using Bytes = std::vector<uint8_t>;

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "make_seeds: %s\n", what.c_str());
  std::exit(1);
}

void be32(Bytes& b, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) b.push_back(static_cast<uint8_t>(v >> shift));
}

Bytes idx_images(uint32_t count, uint32_t rows, uint32_t cols) {
  Bytes b;
  be32(b, 0x00000803);
  be32(b, count);
  be32(b, rows);
  be32(b, cols);
  for (uint32_t i = 0; i < count * rows * cols; ++i) b.push_back(static_cast<uint8_t>(i * 13 + 1));
  return b;
}

Bytes idx_labels(uint32_t count) {
  Bytes b;
  be32(b, 0x00000801);
  be32(b, count);
  for (uint32_t i = 0; i < count; ++i) b.push_back(static_cast<uint8_t>(i % 10));
  return b;
}

Bytes cifar_records(bool cifar100, int count) {
  Bytes b;
  for (int i = 0; i < count; ++i) {
    if (cifar100) b.push_back(static_cast<uint8_t>(i % 20));
    b.push_back(static_cast<uint8_t>((i * 7) % (cifar100 ? 100 : 10)));
    for (int k = 0; k < 3072; ++k) b.push_back(static_cast<uint8_t>(i * 31 + k * 7));
  }
  return b;
}

Bytes gzip(const Bytes& in) {
  z_stream z{};
  if (deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) die("deflateInit2");
  Bytes out(deflateBound(&z, static_cast<uLong>(in.size())) + 32);
  z.next_in = const_cast<Bytef*>(in.data());
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) die("deflate");
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

void seed(const std::filesystem::path& dir, const std::string& name, uint8_t mode, const Bytes& body) {
  std::filesystem::create_directories(dir);
  std::ofstream out(dir / name, std::ios::binary);
  out.put(static_cast<char>(mode));
  out.write(reinterpret_cast<const char*>(body.data()), static_cast<std::streamsize>(body.size()));
  if (!out) die("could not write " + (dir / name).string());
}

void seed_file(const std::filesystem::path& dir, const std::string& name, const Bytes& bytes) {
  std::filesystem::create_directories(dir);
  std::ofstream out(dir / name, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) die("could not write " + (dir / name).string());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) die("usage: make_seeds OUT_DIR");
  const std::filesystem::path out = argv[1];

  const auto idx = out / "fuzz_idx_reader";
  const Bytes images = idx_images(3, 4, 5), labels = idx_labels(12);
  seed(idx, "images_plain", 0, images);              // plain IDX
  seed(idx, "images_gzip_file", 0, gzip(images));    // a .gz file, mutated compressed
  seed(idx, "images_gzip_wrapped", 2, images);       // IDX mutated, then compressed by the harness
  seed(idx, "labels_plain", 1, labels);
  seed(idx, "labels_gzip_file", 1, gzip(labels));
  seed(idx, "labels_gzip_wrapped", 3, labels);
  seed(idx, "labels_3_classes", 1 | (3 << 2), idx_labels(3));

  const auto cifar = out / "fuzz_cifar_reader";
  for (int cifar100 = 0; cifar100 <= 1; ++cifar100) {
    const std::string name = cifar100 ? "cifar100" : "cifar10";
    const Bytes two = cifar_records(cifar100, 2);
    const uint8_t test_slot = cifar100 ? 1 : 5;
    seed(cifar, name + "_train_plain", static_cast<uint8_t>(cifar100), two);
    seed(cifar, name + "_test_plain", static_cast<uint8_t>(cifar100 | (test_slot << 2)), two);
    seed(cifar, name + "_gzip_file", static_cast<uint8_t>(cifar100), gzip(two));
    seed(cifar, name + "_gzip_wrapped", static_cast<uint8_t>(cifar100 | 2), two);
    seed(cifar, name + "_nested_dir", static_cast<uint8_t>(cifar100 | 32), two);
  }

  // fuzz_checkpoint_fields: the empty input chooses the valid option everywhere.
  seed_file(out / "fuzz_checkpoint_fields", "valid_everywhere", {});
  return 0;
}

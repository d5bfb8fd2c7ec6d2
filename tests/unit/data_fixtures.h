// Writers for the data-reader tests: small IDX and CIFAR files, plain or gzip-compressed, in a
// temporary directory that is removed when the test ends.
#pragma once
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"

namespace sb::testing {

using Bytes = std::vector<uint8_t>;

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "sb_data_XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return (std::filesystem::path(path_) / name).string(); }

 private:
  std::string path_;
};

inline void write_file(const std::string& path, const Bytes& bytes, bool gzip = false) {
  if (gzip) {
    gzFile f = gzopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr) << path;
    if (!bytes.empty()) {
      ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())), int(bytes.size()));
    }
    ASSERT_EQ(gzclose(f), Z_OK);
  } else {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    ASSERT_TRUE(out.good()) << path;
  }
}

inline Bytes read_raw(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void append_be32(Bytes& b, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) b.push_back(static_cast<uint8_t>(v >> shift));
}

inline Bytes idx_header(uint32_t magic, const std::vector<uint32_t>& dims) {
  Bytes b;
  append_be32(b, magic);
  for (uint32_t d : dims) append_be32(b, d);
  return b;
}

// A deterministic pixel value for (sample, offset) so that readers can be checked byte for byte.
inline uint8_t fixture_pixel(int64_t sample, int64_t offset) {
  return static_cast<uint8_t>((sample * 37 + offset * 11 + 5) & 0xFF);
}

inline Bytes idx_images(uint32_t count, uint32_t rows, uint32_t cols) {
  Bytes b = idx_header(0x00000803, {count, rows, cols});
  for (uint32_t i = 0; i < count; ++i)
    for (uint32_t k = 0; k < rows * cols; ++k) b.push_back(fixture_pixel(i, k));
  return b;
}

inline uint8_t fixture_label(int64_t sample, int classes) { return static_cast<uint8_t>((sample * 7 + 3) % classes); }

inline Bytes idx_labels(uint32_t count) {
  Bytes b = idx_header(0x00000801, {count});
  for (uint32_t i = 0; i < count; ++i) b.push_back(fixture_label(i, 10));
  return b;
}

// The four MNIST files in dir with n_train/n_test samples of rows x cols.
inline void write_mnist_dir(const std::string& dir, uint32_t n_train, uint32_t n_test, bool gzip, uint32_t rows = 28,
                            uint32_t cols = 28) {
  const std::string ext = gzip ? ".gz" : "";
  write_file(dir + "/train-images-idx3-ubyte" + ext, idx_images(n_train, rows, cols), gzip);
  write_file(dir + "/train-labels-idx1-ubyte" + ext, idx_labels(n_train), gzip);
  write_file(dir + "/t10k-images-idx3-ubyte" + ext, idx_images(n_test, rows, cols), gzip);
  write_file(dir + "/t10k-labels-idx1-ubyte" + ext, idx_labels(n_test), gzip);
}

// CIFAR records: label byte(s) then 3072 pixel bytes. Coarse labels are (fine / 5), as in CIFAR-100's
// 20 superclasses of 5 classes each (only their range matters to the reader).
inline Bytes cifar10_records(int64_t first_sample, int64_t count) {
  Bytes b;
  for (int64_t i = first_sample; i < first_sample + count; ++i) {
    b.push_back(fixture_label(i, 10));
    for (int k = 0; k < 3072; ++k) b.push_back(fixture_pixel(i, k));
  }
  return b;
}

inline uint8_t fixture_fine_label(int64_t sample) { return static_cast<uint8_t>((sample * 13 + 1) % 100); }

inline Bytes cifar100_records(int64_t first_sample, int64_t count) {
  Bytes b;
  for (int64_t i = first_sample; i < first_sample + count; ++i) {
    b.push_back(static_cast<uint8_t>(fixture_fine_label(i) / 5));
    b.push_back(fixture_fine_label(i));
    for (int k = 0; k < 3072; ++k) b.push_back(fixture_pixel(i, k));
  }
  return b;
}

// gmock is not linked into the tests, so a substring check of our own.
inline ::testing::AssertionResult contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\n  message: " << text << "\n  expected to contain: " << part;
}
#define EXPECT_CONTAINS(text, part) EXPECT_TRUE(::sb::testing::contains((text), (part)))

// Runs f and returns the UserError's message ("" and a test failure when none is thrown).
template <typename F>
std::string user_error_of(F&& f) {
  try {
    f();
  } catch (const sb::UserError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a sb::UserError";
  return "";
}

}  // namespace sb::testing

// Fuzzes the IDX (MNIST) readers read_idx_images and read_idx_labels on a file of hostile bytes.
//
// Input: one mode byte, then the file's bytes.
//   mode bit 0     0: read_idx_images, 1: read_idx_labels
//   mode bit 1     0: the file holds the bytes as they are (plain IDX, or gzip the fuzzer mutated at the
//                     compressed level); 1: the file holds their gzip compression (valid gzip around
//                     mutated IDX, which reaches the header and body checks through zlib)
//   mode bits 2-7  labels only: num_classes (0 means the default, 10)
// Allowed outcomes: a result, or sb::UserError. Anything else is a finding.
#include <cstddef>
#include <cstdint>

#include "core/error.h"
#include "data/idx_reader.h"
#include "fuzz_util.h"

using namespace sb;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::abort_on_fatal();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fuzz::ScratchFile file("sb_fuzz_idx");
  if (size < 1) return 0;
  const uint8_t mode = data[0];
  const uint8_t* body = data + 1;
  const size_t n = size - 1;
  if (mode & 2)
    file.write(fuzz::gzip(body, n));
  else
    file.write(body, n);
  try {
    if ((mode & 1) == 0) {
      const IdxImages images = read_idx_images(file.path());
      SB_FUZZ_REQUIRE(images.count > 0 && images.rows > 0 && images.cols > 0);
      SB_FUZZ_REQUIRE(images.pixels.size() ==
                      static_cast<size_t>(images.count) * static_cast<size_t>(images.rows) * static_cast<size_t>(images.cols));
    } else {
      const int classes = (mode >> 2) == 0 ? 10 : (mode >> 2);
      const std::vector<int32_t> labels = read_idx_labels(file.path(), classes);
      SB_FUZZ_REQUIRE(!labels.empty());
      for (int32_t label : labels) SB_FUZZ_REQUIRE(label >= 0 && label < classes);
    }
  } catch (const UserError& e) {
    fuzz::expected(e);  // the answer to a bad file
  }
  return 0;
}

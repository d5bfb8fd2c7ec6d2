#include "data/image/pack_check.h"

#include <algorithm>
#include <atomic>
#include <thread>

#include "data/image/encoded_images.h"
#include "data/image/image_decoder.h"

namespace sb {
namespace {

// Reads sample i as training reads it, then decodes it whole.
std::string problem_of(const EncodedImages& files, int64_t i) {
  thread_local std::vector<uint8_t> buffer;
  thread_local std::vector<std::span<const uint8_t>> bytes;
  thread_local std::vector<std::string> errors;
  files.read(std::span<const int64_t>(&i, 1), buffer, bytes, errors);
  if (!errors[0].empty()) return errors[0];
  try {
    decode_image(bytes[0]);
  } catch (const ImageDecodeError& e) {
    return "'" + files.name(i) + "': " + e.what();
  }
  return "";
}

}  // namespace

std::vector<std::string> undecodable_images(const std::vector<ImageFile>& images, int workers) {
  const EncodedImages files = EncodedImages::from_folder(images);
  std::vector<std::string> problems(images.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < images.size();) problems[i] = problem_of(files, static_cast<int64_t>(i));
  };
  std::vector<std::thread> threads;
  const int n = std::max(1, std::min<int>(workers, static_cast<int>(images.size())));
  for (int t = 1; t < n; ++t) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
  return problems;
}

}  // namespace sb

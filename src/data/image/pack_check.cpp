#include "data/image/pack_check.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <thread>

#include "data/image/image_decoder.h"

namespace sb {
namespace {

std::string problem_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "cannot open '" + path + "': " + std::strerror(errno);
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return "reading '" + path + "' failed";
  try {
    decode_image(bytes);
  } catch (const ImageDecodeError& e) {
    return "'" + path + "': " + e.what();
  }
  return "";
}

}  // namespace

std::vector<std::string> undecodable_images(const std::vector<ImageFile>& images, int workers) {
  std::vector<std::string> problems(images.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < images.size();) problems[i] = problem_of(images[i].path);
  };
  std::vector<std::thread> threads;
  const int n = std::max(1, std::min<int>(workers, static_cast<int>(images.size())));
  for (int t = 1; t < n; ++t) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
  return problems;
}

}  // namespace sb

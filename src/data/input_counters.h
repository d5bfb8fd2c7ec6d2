// What the input pipeline of image files did, counted as it goes: time in each of its phases (the
// workers' reading, and decoding and augmenting on the CPU, summed over the workers, so that a phase's
// seconds can exceed the wall time; on the GPU, the decode, augment and upload times of the copy stream),
// bytes read, images decoded, files skipped (--bad-images skip) and images the GPU decoder refused and the
// CPU decoded, with the names of the last few files skipped, for the console.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace sb {

// The skipped files a console line names; the rest it counts.
inline constexpr size_t kSkippedNamesShown = 3;

struct InputTotals {
  double read_seconds = 0, decode_seconds = 0, augment_seconds = 0, copy_seconds = 0;
  int64_t bytes = 0, images = 0, skipped = 0, cpu_fallbacks = 0;
  std::vector<std::string> last_skipped;  // the names of the last skipped files, oldest first, at most kSkippedNamesShown

  // The work between `before` and this; of the names, those skipped in between.
  InputTotals operator-(const InputTotals& before) const {
    InputTotals d{read_seconds - before.read_seconds, decode_seconds - before.decode_seconds,
                  augment_seconds - before.augment_seconds, copy_seconds - before.copy_seconds, bytes - before.bytes,
                  images - before.images, skipped - before.skipped, cpu_fallbacks - before.cpu_fallbacks, {}};
    const size_t named = std::min(last_skipped.size(), static_cast<size_t>(std::max<int64_t>(d.skipped, 0)));
    d.last_skipped.assign(last_skipped.end() - static_cast<std::ptrdiff_t>(named), last_skipped.end());
    return d;
  }
};

// The files --bad-images skip left out of one batch, noted while its rows are built (by several workers at
// once) and counted when a step takes the batch: a batch built ahead that no step takes counts nothing.
class SkippedFiles {
 public:
  void add(const std::string& name) {
    const std::lock_guard<std::mutex> lock(mutex_);
    names_.push_back(name);
  }
  std::vector<std::string> take() {
    const std::lock_guard<std::mutex> lock(mutex_);
    return std::exchange(names_, {});
  }

 private:
  std::mutex mutex_;
  std::vector<std::string> names_;
};

class InputCounters {
 public:
  void add_read(int64_t ns, int64_t bytes) {
    read_ns_ += ns;
    bytes_ += bytes;
  }
  void add_decode(int64_t ns) { decode_ns_ += ns; }
  void add_augment(int64_t ns, int64_t images) {
    augment_ns_ += ns;
    images_ += images;
  }
  void add_copy(int64_t ns) { copy_ns_ += ns; }
  void add_images(int64_t images) { images_ += images; }
  // A file --bad-images skip left out, named as messages name it.
  void add_skipped(const std::string& name) {
    const std::lock_guard<std::mutex> lock(names_mutex_);
    ++skipped_;
    last_skipped_.push_back(name);
    if (last_skipped_.size() > kSkippedNamesShown) last_skipped_.erase(last_skipped_.begin());
  }
  void add_skipped(const std::vector<std::string>& names) {
    for (const std::string& name : names) add_skipped(name);
  }
  void add_cpu_fallback() { ++cpu_fallbacks_; }

  InputTotals totals() const {
    const std::lock_guard<std::mutex> lock(names_mutex_);
    return {read_ns_.load() * 1e-9, decode_ns_.load() * 1e-9, augment_ns_.load() * 1e-9, copy_ns_.load() * 1e-9, bytes_.load(),
            images_.load(), skipped_.load(), cpu_fallbacks_.load(), last_skipped_};
  }

 private:
  std::atomic<int64_t> read_ns_{0}, decode_ns_{0}, augment_ns_{0}, copy_ns_{0}, bytes_{0}, images_{0}, skipped_{0}, cpu_fallbacks_{0};
  mutable std::mutex names_mutex_;  // the count and the names of skipped files change together
  std::vector<std::string> last_skipped_;
};

}  // namespace sb

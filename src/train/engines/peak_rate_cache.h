// The GPU's measured peak GEMM rate (train/engines/cuda/peak_rate.h), kept across runs in the cache folder
// (train/cache_folder.h) so that it is measured once per card and precision rather than once per run.
// One file per key, named after it (peak-gemm-<digest of the key>.sbpeak):
//   "SBPEAK01"  magic, 8 bytes
//   u32         format version (kPeakRateFileVersion)
//   u32 + bytes the key: the card, its driver and libraries, the precision and the GEMM's size
//   f64         the rate in TFLOP/s, finite and above zero
//   u32         CRC-32 of every byte before it
// all little-endian. A file is used only when every field checks out and its key is the run's; anything
// else is ignored after one warning, and the rate is measured again and the file replaced.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sb {

inline constexpr uint32_t kPeakRateFileVersion = 1;

std::vector<uint8_t> encode_peak_rate(const std::string& key, double tflops);

struct PeakRateRecord {
  std::string key;
  double tflops = 0;
};
// The file's key and rate, or nothing with the reason in *why.
std::optional<PeakRateRecord> decode_peak_rate(const uint8_t* bytes, size_t size, std::string* why);

// The cache file of one key in one folder.
class PeakRateCache {
 public:
  PeakRateCache(const std::string& folder, std::string key);
  const std::string& path() const { return path_; }
  // The stored rate; nothing when there is no file (silently) or it is refused (after one warning naming
  // the file and the reason).
  std::optional<double> read() const;
  // Replaces the file atomically, so that ranks measuring at once leave one whole file. A failure warns
  // and the run goes on (the next run measures again).
  void write(double tflops) const;

 private:
  std::string key_, path_;
};

}  // namespace sb

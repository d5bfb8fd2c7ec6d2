#include "train/engines/peak_rate_cache.h"

#include <cmath>
#include <cstring>
#include <filesystem>

#include "core/byte_format.h"
#include "core/cache_file.h"
#include "core/checksums.h"

namespace sb {

namespace {

constexpr char kMagic[8] = {'S', 'B', 'P', 'E', 'A', 'K', '0', '1'};
constexpr uint32_t kMaxKeyBytes = 4096;  // an honest key is a few hundred bytes
// magic, version, key length, rate, CRC: the bytes around the key.
constexpr size_t kFixedBytes = sizeof kMagic + 4 + 4 + 8 + 4;

constexpr CacheFileKind kPeakRateCache{"peak-rate cache", "measuring the GPU's peak GEMM rate instead",
                                       "the next run measures again", kFixedBytes + kMaxKeyBytes};

std::optional<PeakRateRecord> refused(std::string* why, const std::string& reason) {
  if (why) *why = reason;
  return std::nullopt;
}

ByteWriter peak_rate_file(const std::string& key, double tflops) {
  ByteWriter w;
  w.raw(kMagic, sizeof kMagic);
  w.u32(kPeakRateFileVersion);
  w.text(key);
  w.f64(tflops);
  w.crc32_from(0);
  return w;
}

}  // namespace

std::vector<uint8_t> encode_peak_rate(const std::string& key, double tflops) { return peak_rate_file(key, tflops).take(); }

std::optional<PeakRateRecord> decode_peak_rate(const uint8_t* bytes, size_t size, std::string* why) {
  if (size < sizeof kMagic || std::memcmp(bytes, kMagic, sizeof kMagic) != 0)
    return refused(why, "not a scalebench peak-rate file (bad magic)");
  if (size < kFixedBytes) return refused(why, "cut short (" + std::to_string(size) + " bytes)");
  ByteReader r(bytes, size);
  uint32_t version = 0, key_bytes = 0;
  // The size check above leaves room for the fixed fields, and the one below for the key: no read here
  // can run out.
  r.skip(sizeof kMagic);
  r.u32(&version);
  if (version != kPeakRateFileVersion)
    return refused(why, "format version " + std::to_string(version) + ", this scalebench reads " + std::to_string(kPeakRateFileVersion));
  r.u32(&key_bytes);
  if (key_bytes > kMaxKeyBytes) return refused(why, "a key of " + std::to_string(key_bytes) + " bytes (damaged)");
  if (size != kFixedBytes + key_bytes)
    return refused(why, std::to_string(size) + " bytes where its key's length makes " + std::to_string(kFixedBytes + key_bytes) +
                            " (cut short or appended to)");
  if (!has_trailing_crc32(bytes, size)) return refused(why, "its checksum does not match (damaged)");
  PeakRateRecord record;
  const uint8_t* key = nullptr;
  r.view(key_bytes, &key);
  record.key.assign(reinterpret_cast<const char*>(key), key_bytes);
  r.f64(&record.tflops);
  if (!std::isfinite(record.tflops) || !(record.tflops > 0)) return refused(why, "a rate that is not a positive number");
  return record;
}

PeakRateCache::PeakRateCache(const std::string& folder, std::string key)
    : key_(std::move(key)), path_((std::filesystem::path(folder) / ("peak-gemm-" + name_digest(key_) + ".sbpeak")).string()) {}

std::optional<double> PeakRateCache::read() const {
  std::string why;
  const std::optional<PeakRateRecord> record = read_cache_file<PeakRateRecord>(kPeakRateCache, path_, decode_peak_rate, &why);
  if (record && record->key == key_) return record->tflops;
  if (record) why = "written for another card, driver, library or precision";
  if (!why.empty()) warn_ignored_cache_file(kPeakRateCache, path_, why);  // empty: not measured yet
  return std::nullopt;
}

void PeakRateCache::write(double tflops) const {
  save_cache_file(kPeakRateCache, path_, peak_rate_file(key_, tflops), Flush::NotNeeded);
}

}  // namespace sb

#include "train/peak_rate_cache.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>

#include "core/checksums.h"
#include "core/log.h"
#include "core/replace_file.h"

namespace sb {

namespace {

constexpr char kMagic[8] = {'S', 'B', 'P', 'E', 'A', 'K', '0', '1'};
constexpr uint32_t kMaxKeyBytes = 4096;  // an honest key is a few hundred bytes
// magic, version, key length, rate, CRC: the bytes around the key.
constexpr size_t kFixedBytes = sizeof kMagic + 4 + 4 + 8 + 4;

void put_le(std::vector<uint8_t>& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

uint64_t get_le(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

std::optional<PeakRateRecord> refused(std::string* why, const std::string& reason) {
  if (why) *why = reason;
  return std::nullopt;
}

}  // namespace

std::vector<uint8_t> encode_peak_rate(const std::string& key, double tflops) {
  std::vector<uint8_t> file(kMagic, kMagic + sizeof kMagic);
  put_le(file, kPeakRateFileVersion, 4);
  put_le(file, key.size(), 4);
  file.insert(file.end(), key.begin(), key.end());
  uint64_t rate_bits;
  std::memcpy(&rate_bits, &tflops, sizeof rate_bits);
  put_le(file, rate_bits, 8);
  put_le(file, crc32_of(file.data(), file.size()), 4);
  return file;
}

std::optional<PeakRateRecord> decode_peak_rate(const uint8_t* bytes, size_t size, std::string* why) {
  if (size < sizeof kMagic || std::memcmp(bytes, kMagic, sizeof kMagic) != 0)
    return refused(why, "not a scalebench peak-rate file (bad magic)");
  if (size < kFixedBytes) return refused(why, "cut short (" + std::to_string(size) + " bytes)");
  const uint8_t* p = bytes + sizeof kMagic;
  const auto version = static_cast<uint32_t>(get_le(p, 4));
  if (version != kPeakRateFileVersion)
    return refused(why, "format version " + std::to_string(version) + ", this scalebench reads " + std::to_string(kPeakRateFileVersion));
  const auto key_bytes = static_cast<uint32_t>(get_le(p + 4, 4));
  if (key_bytes > kMaxKeyBytes) return refused(why, "a key of " + std::to_string(key_bytes) + " bytes (damaged)");
  if (size != kFixedBytes + key_bytes)
    return refused(why, std::to_string(size) + " bytes where its key's length makes " + std::to_string(kFixedBytes + key_bytes) +
                            " (cut short or appended to)");
  const size_t crc_at = size - 4;
  if (crc32_of(bytes, crc_at) != static_cast<uint32_t>(get_le(bytes + crc_at, 4)))
    return refused(why, "its checksum does not match (damaged)");
  PeakRateRecord record;
  record.key.assign(reinterpret_cast<const char*>(p + 8), key_bytes);
  const uint64_t rate_bits = get_le(p + 8 + key_bytes, 8);
  std::memcpy(&record.tflops, &rate_bits, sizeof record.tflops);
  if (!std::isfinite(record.tflops) || !(record.tflops > 0)) return refused(why, "a rate that is not a positive number");
  return record;
}

PeakRateCache::PeakRateCache(const std::string& folder, std::string key)
    : key_(std::move(key)), path_((std::filesystem::path(folder) / ("peak-gemm-" + name_digest(key_) + ".sbpeak")).string()) {}

std::optional<double> PeakRateCache::read() const {
  std::error_code ec;
  if (!std::filesystem::exists(path_, ec)) return std::nullopt;  // not measured yet
  std::ifstream in(path_, std::ios::binary);
  // One byte past the largest honest file is enough to refuse a longer one.
  std::vector<uint8_t> bytes(kFixedBytes + kMaxKeyBytes + 1);
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  std::string why = "cannot read it";
  if (!in.bad() && (in || in.eof())) {
    bytes.resize(static_cast<size_t>(in.gcount()));
    if (const std::optional<PeakRateRecord> record = decode_peak_rate(bytes.data(), bytes.size(), &why)) {
      if (record->key == key_) return record->tflops;
      why = "written for another card, driver, library or precision";
    }
  }
  log_all("warning: peak-rate cache ignores %s: %s; measuring the GPU's peak GEMM rate instead\n", path_.c_str(), why.c_str());
  return std::nullopt;
}

void PeakRateCache::write(double tflops) const {
  const std::string error = replace_file(path_, encode_peak_rate(key_, tflops), Flush::NotNeeded);
  if (!error.empty())
    log_all("warning: peak-rate cache cannot save %s: %s (the next run measures again)\n", path_.c_str(), error.c_str());
}

}  // namespace sb

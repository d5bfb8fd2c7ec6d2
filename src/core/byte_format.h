// The byte formats of the on-disk caches (the cuDNN plan cache, nn/plan_store.h; the peak-rate cache,
// train/engines/peak_rate_cache.h; the decoded-data cache, data/data_cache.h): fields appended little-endian by
// ByteWriter, a CRC-32 over them, the file published atomically; and ByteReader, which reads the same
// fields back from bytes that may be damaged or hostile, never past their end.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/replace_file.h"

namespace sb {

class ByteWriter {
 public:
  void reserve(size_t bytes) { bytes_.reserve(bytes); }
  void u8(uint8_t v) { bytes_.push_back(v); }
  void u32(uint32_t v) { little_endian(v, 4); }
  void u64(uint64_t v) { little_endian(v, 8); }
  void i32(int32_t v) { u32(static_cast<uint32_t>(v)); }
  void i64(int64_t v) { u64(static_cast<uint64_t>(v)); }
  void f32(float v);
  void f64(double v);
  void raw(const void* data, size_t size);
  // A u32 length, then the bytes.
  void text(std::string_view s);

  size_t size() const { return bytes_.size(); }
  // Overwrites a field written earlier at byte `at` (a length or checksum known only after what follows).
  void u32_at(size_t at, uint32_t v) { little_endian_at(at, v, 4); }
  void u64_at(size_t at, uint64_t v) { little_endian_at(at, v, 8); }
  // Appends the CRC-32 of every byte from `from` on.
  void crc32_from(size_t from = 0);

  const std::vector<uint8_t>& bytes() const { return bytes_; }
  std::vector<uint8_t> take() { return std::move(bytes_); }
  // Replaces the file at `path` with the bytes atomically (core/replace_file.h). Returns an empty string
  // on success, else what failed and why.
  std::string publish(const std::string& path, Flush flush) const { return replace_file(path, bytes_, flush); }

 private:
  void little_endian(uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) bytes_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  void little_endian_at(size_t at, uint64_t v, int bytes);

  std::vector<uint8_t> bytes_;
};

// Reads ByteWriter's fields. Each read returns false, consuming nothing, when the bytes left can't hold
// the field (or a text's length is above its bound); the first failure is kept in error(), with the offset
// at which it happened, for the caller's message.
class ByteReader {
 public:
  ByteReader(const uint8_t* data, size_t size) : begin_(data), p_(data), left_(size) {}

  bool u8(uint8_t* v);
  bool u32(uint32_t* v);
  bool u64(uint64_t* v);
  bool i32(int32_t* v);
  bool i64(int64_t* v);
  bool f32(float* v);
  bool f64(double* v);
  // A u32 length of at most max_bytes, then that many bytes.
  bool text(std::string* s, uint32_t max_bytes);
  // `size` bytes in place: *out points at them (valid while the reader's bytes are).
  bool view(size_t size, const uint8_t** out);
  bool skip(size_t size);

  size_t left() const { return left_; }
  size_t offset() const { return static_cast<size_t>(p_ - begin_); }
  const uint8_t* here() const { return p_; }
  // Why the first read that failed did, e.g. "needs 4 bytes at offset 12, 2 left"; empty while none has.
  const std::string& error() const { return error_; }

 private:
  bool fail(std::string reason);
  bool little_endian(uint64_t* v, int bytes);

  const uint8_t* begin_;
  const uint8_t* p_;
  size_t left_;
  std::string error_;
};

// Whether the last 4 bytes are the CRC-32 of those before them (false when there are fewer than 4).
bool has_trailing_crc32(const uint8_t* data, size_t size);

}  // namespace sb

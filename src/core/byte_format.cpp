#include "core/byte_format.h"

#include <cstring>

#include "core/checksums.h"

namespace sb {

void ByteWriter::f32(float v) {
  uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  u32(u);
}

void ByteWriter::f64(double v) {
  uint64_t u;
  std::memcpy(&u, &v, sizeof u);
  u64(u);
}

void ByteWriter::raw(const void* data, size_t size) {
  const size_t at = bytes_.size();
  bytes_.resize(at + size);
  if (size) std::memcpy(bytes_.data() + at, data, size);
}

void ByteWriter::text(std::string_view s) {
  u32(static_cast<uint32_t>(s.size()));
  raw(s.data(), s.size());
}

void ByteWriter::little_endian_at(size_t at, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) bytes_.at(at + static_cast<size_t>(i)) = static_cast<uint8_t>(v >> (8 * i));
}

void ByteWriter::crc32_from(size_t from) { u32(crc32_of(bytes_.data() + from, bytes_.size() - from)); }

bool ByteReader::fail(std::string reason) {
  if (error_.empty()) error_ = std::move(reason);
  return false;
}

bool ByteReader::view(size_t size, const uint8_t** out) {
  if (size > left_) {
    return fail("needs " + std::to_string(size) + " bytes at offset " + std::to_string(offset()) + ", " +
                std::to_string(left_) + " left");
  }
  *out = p_;
  p_ += size;
  left_ -= size;
  return true;
}

bool ByteReader::skip(size_t size) {
  const uint8_t* ignored = nullptr;
  return view(size, &ignored);
}

bool ByteReader::little_endian(uint64_t* v, int bytes) {
  const uint8_t* p = nullptr;
  if (!view(static_cast<size_t>(bytes), &p)) return false;
  *v = 0;
  for (int i = 0; i < bytes; ++i) *v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return true;
}

bool ByteReader::u8(uint8_t* v) {
  uint64_t u;
  if (!little_endian(&u, 1)) return false;
  *v = static_cast<uint8_t>(u);
  return true;
}

bool ByteReader::u32(uint32_t* v) {
  uint64_t u;
  if (!little_endian(&u, 4)) return false;
  *v = static_cast<uint32_t>(u);
  return true;
}

bool ByteReader::u64(uint64_t* v) { return little_endian(v, 8); }

bool ByteReader::i32(int32_t* v) {
  uint32_t u;
  if (!u32(&u)) return false;
  *v = static_cast<int32_t>(u);
  return true;
}

bool ByteReader::i64(int64_t* v) {
  uint64_t u;
  if (!u64(&u)) return false;
  *v = static_cast<int64_t>(u);
  return true;
}

bool ByteReader::f32(float* v) {
  uint32_t u;
  if (!u32(&u)) return false;
  std::memcpy(v, &u, sizeof u);
  return true;
}

bool ByteReader::f64(double* v) {
  uint64_t u;
  if (!u64(&u)) return false;
  std::memcpy(v, &u, sizeof u);
  return true;
}

bool ByteReader::text(std::string* s, uint32_t max_bytes) {
  const size_t at = offset();
  uint32_t n;
  if (!u32(&n)) return false;
  // Checked before anything is allocated: a damaged length must not decide how much memory is taken.
  const uint8_t* bytes = nullptr;
  if (n > max_bytes || !view(n, &bytes)) {
    p_ -= 4;  // a failed read consumes nothing
    left_ += 4;
    if (n > max_bytes) {
      return fail("a length of " + std::to_string(n) + " bytes at offset " + std::to_string(at) + ", above the bound " +
                  std::to_string(max_bytes));
    }
    return false;
  }
  s->assign(reinterpret_cast<const char*>(bytes), n);
  return true;
}

bool has_trailing_crc32(const uint8_t* data, size_t size) {
  if (size < 4) return false;
  uint32_t stored = 0;
  for (int i = 0; i < 4; ++i) stored |= static_cast<uint32_t>(data[size - 4 + static_cast<size_t>(i)]) << (8 * i);
  return crc32_of(data, size - 4) == stored;
}

}  // namespace sb

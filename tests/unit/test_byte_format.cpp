// The caches' shared byte format (core/byte_format.h) and file handling (core/cache_file.h): what the
// writer appends the reader gives back, the reader never reads past the end and says where it stopped, a
// missing file is silent and a refused one is explained.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "core/byte_format.h"
#include "core/cache_file.h"
#include "core/checksums.h"

namespace sb {
namespace {

using Bytes = std::vector<uint8_t>;

TEST(ByteWriter, FieldsAreLittleEndianAndTextsCarryTheirLength) {
  ByteWriter w;
  w.u8(0xab);
  w.u32(0x01020304);
  w.i64(-2);
  w.text("hi");
  const Bytes expected{0xab, 0x04, 0x03, 0x02, 0x01, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 'h', 'i'};
  EXPECT_EQ(w.bytes(), expected);
}

TEST(ByteWriter, FieldsWrittenLaterAtAnOffsetAndTheChecksum) {
  ByteWriter w;
  w.u32(7);
  const size_t at = w.size();
  w.u64(0);
  w.text("payload");
  w.u64_at(at, 0x1122334455667788ull);
  w.u32_at(0, 9);
  w.crc32_from(0);
  const Bytes& b = w.bytes();
  ASSERT_EQ(b.size(), 4u + 8 + 4 + 7 + 4);
  EXPECT_EQ(b[0], 9);
  EXPECT_EQ(b[4], 0x88);
  EXPECT_EQ(b[11], 0x11);
  EXPECT_TRUE(has_trailing_crc32(b.data(), b.size()));
  Bytes damaged = b;
  damaged[5] ^= 1;
  EXPECT_FALSE(has_trailing_crc32(damaged.data(), damaged.size()));
  EXPECT_FALSE(has_trailing_crc32(b.data(), 3)) << "fewer than 4 bytes hold no checksum";
  EXPECT_THROW(w.u32_at(w.size() - 2, 1), std::out_of_range) << "a field past the end is not written";
}

TEST(ByteReader, GivesBackWhatTheWriterWrote) {
  ByteWriter w;
  w.u8(200);
  w.u32(4000000000u);
  w.u64(1ull << 60);
  w.i32(-5);
  w.i64(std::numeric_limits<int64_t>::min());
  w.f32(-1.5f);
  w.f64(std::numeric_limits<double>::infinity());
  w.text(std::string("a\0b", 3));
  w.raw("xyz", 3);
  const Bytes b = w.take();
  ByteReader r(b.data(), b.size());
  uint8_t u8 = 0;
  uint32_t u32 = 0;
  uint64_t u64 = 0;
  int32_t i32 = 0;
  int64_t i64 = 0;
  float f32 = 0;
  double f64 = 0;
  std::string text;
  const uint8_t* raw = nullptr;
  ASSERT_TRUE(r.u8(&u8) && r.u32(&u32) && r.u64(&u64) && r.i32(&i32) && r.i64(&i64) && r.f32(&f32) && r.f64(&f64) &&
              r.text(&text, 3) && r.view(3, &raw))
      << r.error();
  EXPECT_EQ(u8, 200);
  EXPECT_EQ(u32, 4000000000u);
  EXPECT_EQ(u64, 1ull << 60);
  EXPECT_EQ(i32, -5);
  EXPECT_EQ(i64, std::numeric_limits<int64_t>::min());
  EXPECT_EQ(f32, -1.5f);
  EXPECT_TRUE(std::isinf(f64));
  EXPECT_EQ(text, std::string("a\0b", 3));
  EXPECT_EQ(std::memcmp(raw, "xyz", 3), 0);
  EXPECT_EQ(r.left(), 0u);
  EXPECT_EQ(r.offset(), b.size());
  EXPECT_TRUE(r.error().empty());
}

TEST(ByteReader, AReadThatDoesNotFitConsumesNothingAndSaysWhere) {
  const Bytes b{1, 0, 0, 0, 9, 9};
  ByteReader r(b.data(), b.size());
  uint32_t v = 0;
  uint64_t big = 0;
  ASSERT_TRUE(r.u32(&v));
  EXPECT_FALSE(r.u64(&big));
  EXPECT_EQ(r.offset(), 4u) << "the failed read consumed nothing";
  EXPECT_EQ(r.error(), "needs 8 bytes at offset 4, 2 left");
  EXPECT_FALSE(r.skip(3));
  EXPECT_EQ(r.error(), "needs 8 bytes at offset 4, 2 left") << "the first failure is kept";
  EXPECT_TRUE(r.skip(2));
  uint8_t byte = 0;
  EXPECT_FALSE(r.u8(&byte)) << "nothing is read at the end";
}

TEST(ByteReader, ATextLengthIsCheckedAgainstItsBoundAndTheBytesLeft) {
  ByteWriter w;
  w.text("hello");
  const Bytes b = w.take();
  std::string s = "unchanged";
  {
    ByteReader r(b.data(), b.size());
    EXPECT_FALSE(r.text(&s, 4));
    EXPECT_EQ(r.error(), "a length of 5 bytes at offset 0, above the bound 4");
    EXPECT_EQ(r.offset(), 0u);
  }
  {
    ByteReader r(b.data(), b.size() - 1);  // the text cut short
    EXPECT_FALSE(r.text(&s, 100));
    EXPECT_EQ(r.error(), "needs 5 bytes at offset 4, 4 left");
    EXPECT_EQ(r.offset(), 0u) << "the length is given back too";
  }
  EXPECT_EQ(s, "unchanged");
  // A length near 2^32 is refused by the bytes left, before any allocation.
  const Bytes huge{0xff, 0xff, 0xff, 0xff, 'x'};
  ByteReader r(huge.data(), huge.size());
  EXPECT_FALSE(r.text(&s, std::numeric_limits<uint32_t>::max()));
  EXPECT_NE(r.error().find("needs 4294967295 bytes"), std::string::npos) << r.error();
}

constexpr CacheFileKind kKind{"test cache", "rebuilding it instead", "the next run rebuilds it", 64};

std::optional<std::string> decode_text(const uint8_t* data, size_t size, std::string* why) {
  ByteReader r(data, size);
  std::string s;
  if (!r.text(&s, 32) || r.left() != 0) {
    *why = "bad text (" + r.error() + ")";
    return std::nullopt;
  }
  return s;
}

class CacheFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("sb_cache_file_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(CacheFileTest, AMissingFileIsSilentAndASavedOneReadsBack) {
  const std::string path = (dir_ / "sub" / "file").string();
  std::string why = "stale";
  EXPECT_FALSE(read_cache_file<std::string>(kKind, path, decode_text, &why));
  EXPECT_EQ(why, "") << "no file: nothing to warn about";
  ByteWriter w;
  w.text("cached");
  ASSERT_TRUE(save_cache_file(kKind, path, w, Flush::NotNeeded)) << "the folder is created";
  EXPECT_EQ(read_cache_file<std::string>(kKind, path, decode_text, &why), std::optional<std::string>("cached"));
  EXPECT_EQ(why, "");
  EXPECT_FALSE(read_cache_file<std::string>(kKind, path + "/under-a-file", decode_text, &why));
  EXPECT_EQ(why, "") << "a file where a folder should be: no cache file (saving it warns)";
}

TEST_F(CacheFileTest, RefusedFilesSayWhy) {
  std::filesystem::create_directories(dir_);
  const std::string path = (dir_ / "file").string();
  std::ofstream(path, std::ios::binary) << std::string(65, 'x');
  std::string why;
  EXPECT_FALSE(read_cache_file<std::string>(kKind, path, decode_text, &why));
  EXPECT_EQ(why, "larger than 64 bytes");
  std::ofstream(path, std::ios::binary | std::ios::trunc) << std::string(3, 'x');
  EXPECT_FALSE(read_cache_file<std::string>(kKind, path, decode_text, &why));
  EXPECT_EQ(why, "bad text (needs 4 bytes at offset 0, 3 left)");
  std::filesystem::create_directories(dir_ / "folder");
  EXPECT_FALSE(read_cache_file<std::string>(kKind, (dir_ / "folder").string(), decode_text, &why));
  EXPECT_FALSE(why.empty()) << "a path that is no file is refused, not taken for a missing one";
}

TEST_F(CacheFileTest, WarningsNameTheCacheTheFileAndWhatTheRunDoes) {
  EXPECT_EQ(ignored_cache_file(kKind, "/c/f", "damaged"), "test cache ignores /c/f: damaged; rebuilding it instead");
  const CacheFileKind quiet{"plain cache", "", "lost", 1};
  EXPECT_EQ(ignored_cache_file(quiet, "/c/f", "damaged"), "plain cache ignores /c/f: damaged");
  EXPECT_EQ(unsaved_cache_file(kKind, "/c/f", "disk full"), "test cache cannot save /c/f: disk full (the next run rebuilds it)");
  std::filesystem::create_directories(dir_);
  std::ofstream((dir_ / "not-a-folder").string()) << "x";
  ByteWriter w;
  w.u8(1);
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(save_cache_file(kKind, (dir_ / "not-a-folder" / "file").string(), w, Flush::ToDisk));
  const std::string warning = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(warning.find("warning: test cache cannot save"), std::string::npos) << warning;
  EXPECT_EQ(warning.find('\n'), warning.size() - 1) << "one line: " << warning;
}

}  // namespace
}  // namespace sb

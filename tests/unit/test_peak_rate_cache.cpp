// The peak-rate cache (train/engines/peak_rate_cache.h): a stored rate comes back bit for bit under its own key,
// and a file that is damaged, foreign, cut short, of another version or of another key is refused with
// one warning, never trusted.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "train/engines/peak_rate_cache.h"
#include "unit/scratch_dir.h"

namespace sb {
namespace {

using Bytes = std::vector<uint8_t>;

const std::string kKey = "gpu NVIDIA H200\nsms 132\ncompute_capability 9.0\nclock_khz 1980000\ndriver 13000\ncuda_runtime 13000\n"
                         "cublas 13.0.0\ndtype bf16\ntf32 off\ngemm 8192\n";

std::string refusal(const Bytes& file) {
  std::string why;
  const auto record = decode_peak_rate(file.data(), file.size(), &why);
  EXPECT_EQ(record.has_value(), why.empty()) << why;
  return why;
}

void write_bytes(const std::string& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// The warning the cache prints while reading, and what it read.
std::string read_warning(const PeakRateCache& cache, std::optional<double>* rate) {
  ::testing::internal::CaptureStderr();
  *rate = cache.read();
  return ::testing::internal::GetCapturedStderr();
}

class PeakRateCacheTest : public test::ScratchDirTest {};

TEST(PeakRateFile, RoundTripKeepsKeyAndRateExactly) {
  const double rate = 712.345678901234;
  const Bytes file = encode_peak_rate(kKey, rate);
  std::string why;
  const auto record = decode_peak_rate(file.data(), file.size(), &why);
  ASSERT_TRUE(record.has_value()) << why;
  EXPECT_EQ(record->key, kKey);
  EXPECT_EQ(record->tflops, rate);
}

TEST(PeakRateFile, EveryFlippedBitIsRefused) {
  const Bytes file = encode_peak_rate(kKey, 500.0);
  for (size_t byte = 0; byte < file.size(); ++byte)
    for (int bit = 0; bit < 8; ++bit) {
      Bytes damaged = file;
      damaged[byte] ^= static_cast<uint8_t>(1u << bit);
      EXPECT_FALSE(refusal(damaged).empty()) << "byte " << byte << " bit " << bit;
    }
}

TEST(PeakRateFile, ForeignAndOtherVersionFilesAreRefused) {
  EXPECT_NE(refusal(Bytes{}).find("bad magic"), std::string::npos);
  EXPECT_NE(refusal(Bytes{'S', 'B', 'D', 'A', 'T', 'A', '0', '1', 1, 0, 0, 0}).find("bad magic"), std::string::npos);
  Bytes file = encode_peak_rate(kKey, 500.0);
  file[8] = 7;  // another format version
  EXPECT_NE(refusal(file).find("format version 7"), std::string::npos) << refusal(file);
}

TEST(PeakRateFile, CutShortOrLongerFilesAreRefusedAtEveryLength) {
  const Bytes file = encode_peak_rate(kKey, 500.0);
  for (size_t n = 0; n < file.size(); ++n) {
    const Bytes cut(file.begin(), file.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_FALSE(refusal(cut).empty()) << n;
  }
  Bytes longer = file;
  longer.push_back(0);
  EXPECT_NE(refusal(longer).find("appended"), std::string::npos) << refusal(longer);
}

TEST(PeakRateFile, RatesThatAreNotPositiveNumbersAreRefused) {
  for (double bad : {0.0, -3.0, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    const Bytes file = encode_peak_rate(kKey, bad);  // a well-formed file with a rate no measurement gives
    EXPECT_NE(refusal(file).find("positive"), std::string::npos) << bad;
  }
}

TEST_F(PeakRateCacheTest, NoFileIsSilentThenWriteThenRead) {
  const PeakRateCache cache(dir_.string(), kKey);
  std::optional<double> rate;
  EXPECT_EQ(read_warning(cache, &rate), "");
  EXPECT_FALSE(rate.has_value());
  cache.write(987.5);
  EXPECT_EQ(read_warning(cache, &rate), "");
  ASSERT_TRUE(rate.has_value());
  EXPECT_EQ(*rate, 987.5);
  EXPECT_EQ(std::filesystem::path(cache.path()).parent_path(), dir_);
}

TEST_F(PeakRateCacheTest, EachPrecisionAndCardHasItsOwnFile) {
  const PeakRateCache bf16(dir_.string(), kKey), fp16(dir_.string(), kKey + "other\n");
  EXPECT_NE(bf16.path(), fp16.path());
  bf16.write(900.0);
  std::optional<double> rate;
  EXPECT_EQ(read_warning(fp16, &rate), "");
  EXPECT_FALSE(rate.has_value());
}

TEST_F(PeakRateCacheTest, AFileOfAnotherKeyUnderThisNameWarnsOnce) {
  const PeakRateCache cache(dir_.string(), kKey);
  write_bytes(cache.path(), encode_peak_rate("gpu another card\n", 100.0));  // a copied file, or a collision
  std::optional<double> rate;
  const std::string warning = read_warning(cache, &rate);
  EXPECT_FALSE(rate.has_value());
  EXPECT_NE(warning.find("peak-rate cache ignores " + cache.path()), std::string::npos) << warning;
  EXPECT_NE(warning.find("another card"), std::string::npos) << warning;
  EXPECT_EQ(warning.find('\n'), warning.size() - 1) << "one line: " << warning;
}

TEST_F(PeakRateCacheTest, ADamagedFileWarnsAndIsReplacedByTheNextWrite) {
  const PeakRateCache cache(dir_.string(), kKey);
  Bytes file = encode_peak_rate(kKey, 640.0);
  file[file.size() - 6] ^= 0x10;  // in the rate
  write_bytes(cache.path(), file);
  std::optional<double> rate;
  const std::string warning = read_warning(cache, &rate);
  EXPECT_FALSE(rate.has_value());
  EXPECT_NE(warning.find("checksum"), std::string::npos) << warning;
  cache.write(641.0);
  EXPECT_EQ(read_warning(cache, &rate), "");
  EXPECT_EQ(rate, std::optional<double>(641.0));
}

TEST_F(PeakRateCacheTest, AnUnwritableFolderWarnsAndTheRunGoesOn) {
  write_bytes((dir_ / "not-a-folder").string(), Bytes{1});
  const PeakRateCache cache((dir_ / "not-a-folder").string(), kKey);
  ::testing::internal::CaptureStderr();
  cache.write(500.0);
  const std::string warning = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(warning.find("peak-rate cache cannot save"), std::string::npos) << warning;
}

}  // namespace
}  // namespace sb

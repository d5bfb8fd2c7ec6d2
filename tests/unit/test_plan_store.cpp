// The on-disk plan cache (src/nn/plan_store.h): its format round-trips, two writers keep each other's
// entries, and a damaged, truncated or foreign file is ignored with one warning, never trusted.
#include "nn/plan_store.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/checksums.h"
#include "scratch_dir.h"

namespace sb {
namespace {

const std::string kIdentity = "NVIDIA H100 80GB HBM3|sm_count=132|cc=90|driver=12080|cuda=12080|cudnn=91900";

PlanRecord record(int64_t engine, bool tuned, const std::string& plan = "") {
  PlanRecord r;
  r.choice.engine = engine;
  r.choice.knobs = {{2, engine + 1}, {14, -3}, {40, int64_t{1} << 40}};
  r.choice.occurrence = engine % 3;  // a later configuration of the same engine and knobs, for some
  r.tuned = tuned;
  r.ms = tuned ? 0.25f : 0.0f;
  r.plan = plan;
  r.plan_build = plan.empty() ? "" : "0123abcd";
  return r;
}

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

ino_t inode_of(const std::string& path) {
  struct stat st{};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_ino;
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

TEST(PlanFileFormat, RoundTripsEveryField) {
  PlanEntries entries{{"conv_fprop|n=256", record(12, true, std::string("{\"json\":1}\0binary", 17))},
                      {"bn_fwd|c=64", record(3, false)},
                      {"empty_knobs", PlanRecord{PlanChoice{7, {}}, false, 0.0f, "", ""}}};
  const std::vector<uint8_t> bytes = encode_plan_file(kIdentity, entries);
  std::string why;
  const auto file = decode_plan_file(bytes.data(), bytes.size(), &why);
  ASSERT_TRUE(file) << why;
  EXPECT_EQ(file->identity, kIdentity);
  EXPECT_EQ(file->entries, entries);
}

TEST(PlanFileFormat, RefusesEveryFlippedByteAndEveryTruncation) {
  const std::vector<uint8_t> good = encode_plan_file(kIdentity, {{"k", record(5, true, "plan")}});
  for (size_t i = 0; i < good.size(); ++i) {
    std::vector<uint8_t> bad = good;
    bad[i] ^= 0x5a;
    std::string why;
    EXPECT_FALSE(decode_plan_file(bad.data(), bad.size(), &why)) << "byte " << i;
    EXPECT_FALSE(why.empty());
  }
  for (size_t n = 0; n < good.size(); ++n) {
    std::string why;
    EXPECT_FALSE(decode_plan_file(good.data(), n, &why)) << "first " << n << " bytes";
  }
  std::vector<uint8_t> longer = good;
  longer.push_back(0);
  EXPECT_FALSE(decode_plan_file(longer.data(), longer.size(), nullptr));
}

TEST(PlanChoiceWords, RoundTripAndRefuseMalformedWords) {
  const PlanChoice c = record(9, true).choice;
  const std::vector<int32_t> words = encode_choice(c);
  EXPECT_EQ(words[0], static_cast<int32_t>(words.size() - 1));
  EXPECT_EQ(decode_choice(words), c);
  EXPECT_EQ(decode_choice(encode_choice(PlanChoice{})), PlanChoice{});
  std::vector<int32_t> short_by_one(words.begin(), words.end() - 1);
  EXPECT_FALSE(decode_choice(short_by_one));
  std::vector<int32_t> wrong_count = words;
  wrong_count[5] += 1;  // claims one knob more than the words hold
  EXPECT_FALSE(decode_choice(wrong_count));
  std::vector<int32_t> negative_occurrence = words;
  negative_occurrence[4] = -1;  // the high word of the occurrence
  EXPECT_FALSE(decode_choice(negative_occurrence));
  EXPECT_FALSE(decode_choice({}));
}

// The occurrence tells apart the heuristics' configurations that share an engine and knobs: it is part of
// the choice's identity, its name and its words.
TEST(PlanChoiceWords, OccurrenceIsPartOfTheChoice) {
  PlanChoice first{62, {}};
  PlanChoice second = first;
  second.occurrence = 1;
  EXPECT_NE(first, second);
  EXPECT_EQ(first.str(), "eng62{}");
  EXPECT_EQ(second.str(), "eng62{}#1");
  EXPECT_EQ(decode_choice(encode_choice(second)), second);
  EXPECT_NE(decode_choice(encode_choice(second)), first);
}

// A file of the first format (no occurrence) is refused, with its version named: its choices may name
// the wrong one of several configurations, so a run searches again and rewrites the file.
TEST(PlanFileFormat, RefusesTheFirstVersion) {
  std::vector<uint8_t> v1 = encode_plan_file(kIdentity, {{"k", record(5, true)}});
  const uint32_t old_version = 1;
  std::memcpy(v1.data() + 8, &old_version, 4);  // after the 8-byte magic, little-endian
  const uint32_t crc = crc32_of(v1.data(), v1.size() - 4);
  std::memcpy(v1.data() + v1.size() - 4, &crc, 4);
  std::string why;
  EXPECT_FALSE(decode_plan_file(v1.data(), v1.size(), &why));
  EXPECT_NE(why.find("format version 1, expected 2"), std::string::npos) << why;
}

TEST(DefaultPlanCacheDir, FollowsXdgThenHome) {
  const char* old_xdg = std::getenv("XDG_CACHE_HOME");
  const char* old_home = std::getenv("HOME");
  const std::string saved_xdg = old_xdg ? old_xdg : "", saved_home = old_home ? old_home : "";
  ::setenv("XDG_CACHE_HOME", "/xdg/cache", 1);
  ::setenv("HOME", "/home/u", 1);
  EXPECT_EQ(default_plan_cache_dir(), "/xdg/cache/scalebench");
  ::setenv("XDG_CACHE_HOME", "relative/cache", 1);  // not absolute: ignored, as the XDG spec says
  EXPECT_EQ(default_plan_cache_dir(), "/home/u/.cache/scalebench");
  ::unsetenv("XDG_CACHE_HOME");
  EXPECT_EQ(default_plan_cache_dir(), "/home/u/.cache/scalebench");
  ::unsetenv("HOME");
  EXPECT_EQ(default_plan_cache_dir(), "");
  if (old_xdg) ::setenv("XDG_CACHE_HOME", saved_xdg.c_str(), 1);
  if (old_home) ::setenv("HOME", saved_home.c_str(), 1);
}

using PlanStoreTest = test::ScratchDirTest;

TEST_F(PlanStoreTest, SavedEntriesAreFoundByAFreshStore) {
  const std::string folder = (dir_ / "nested" / "cache").string();  // created on save
  {
    PlanStore store(folder, kIdentity);
    EXPECT_EQ(store.find("a"), nullptr);
    store.put("a", record(1, true, "serialised"));
    EXPECT_EQ(store.pending(), 1u);
    ASSERT_TRUE(store.save());
    EXPECT_EQ(store.pending(), 0u);
  }
  PlanStore fresh(folder, kIdentity);
  const PlanRecord* a = fresh.find("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(*a, record(1, true, "serialised"));
  // No temporary or other stray file is left beside the cache and its lock.
  for (const auto& f : std::filesystem::directory_iterator(folder)) {
    const std::string name = f.path().filename().string();
    EXPECT_TRUE(f.path().string() == fresh.path() || f.path().string() == fresh.path() + ".lock") << name;
  }
}

TEST_F(PlanStoreTest, TwoWritersKeepEachOthersEntries) {
  PlanStore first(dir_.string(), kIdentity), second(dir_.string(), kIdentity);
  EXPECT_EQ(first.find("x"), nullptr);  // both read the (empty) cache before either writes
  EXPECT_EQ(second.find("x"), nullptr);
  first.put("from_first", record(1, true));
  second.put("from_second", record(2, true));
  second.put("shared", record(3, false));
  first.put("shared", record(4, true));
  ASSERT_TRUE(first.save());
  ASSERT_TRUE(second.save());  // re-reads what the first wrote and merges

  PlanStore reader(dir_.string(), kIdentity);
  ASSERT_NE(reader.find("from_first"), nullptr);
  ASSERT_NE(reader.find("from_second"), nullptr);
  EXPECT_EQ(reader.find("from_first")->choice.engine, 1);
  EXPECT_EQ(reader.find("from_second")->choice.engine, 2);
  // A tuned entry is not replaced by an untuned one written later.
  EXPECT_EQ(reader.find("shared")->choice.engine, 4);
  EXPECT_TRUE(reader.find("shared")->tuned);
}

TEST_F(PlanStoreTest, TheSameChoiceFromAnotherWriterLeavesTheFileAlone) {
  PlanStore first(dir_.string(), kIdentity), second(dir_.string(), kIdentity);
  first.put("k", record(7, true));
  ASSERT_TRUE(first.save());
  const std::vector<uint8_t> before = read_bytes(first.path());
  PlanRecord timed_elsewhere = record(7, true);
  timed_elsewhere.ms = 9.0f;
  second.put("k", timed_elsewhere);
  second.put("untuned_only_here", record(8, false));
  ASSERT_TRUE(second.save());  // adds its new key, keeps the first writer's record of "k"
  PlanStore reader(dir_.string(), kIdentity);
  ASSERT_NE(reader.find("k"), nullptr);
  EXPECT_EQ(*reader.find("k"), record(7, true));
  ASSERT_NE(reader.find("untuned_only_here"), nullptr);

  PlanStore third(dir_.string(), kIdentity);
  third.put("k", timed_elsewhere);
  const std::vector<uint8_t> with_both = read_bytes(first.path());
  const ino_t inode = inode_of(first.path());
  ASSERT_TRUE(third.save());
  EXPECT_EQ(inode_of(first.path()), inode) << "nothing new: the file is not replaced";
  EXPECT_EQ(read_bytes(first.path()), with_both);
  EXPECT_NE(before, with_both);
}

TEST_F(PlanStoreTest, AnotherDevicesFileIsIgnoredWithOneWarning) {
  PlanStore mine(dir_.string(), kIdentity);
  // A file of another identity at this identity's path (copied, or a hash collision).
  write_bytes(mine.path(), encode_plan_file("NVIDIA A100|sm_count=108", {{"a", record(1, true)}}));
  testing::internal::CaptureStderr();
  EXPECT_EQ(mine.find("a"), nullptr);
  EXPECT_EQ(mine.find("b"), nullptr);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find(mine.path()), std::string::npos) << err;
  EXPECT_NE(err.find("another device"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
}

TEST_F(PlanStoreTest, DamagedFileIsIgnoredWarnedOnceAndReplacedOnSave) {
  PlanStore writer(dir_.string(), kIdentity);
  writer.put("a", record(1, true));
  ASSERT_TRUE(writer.save());
  std::vector<uint8_t> bytes = read_bytes(writer.path());
  bytes[bytes.size() / 2] ^= 0xff;
  write_bytes(writer.path(), bytes);

  PlanStore reader(dir_.string(), kIdentity);
  testing::internal::CaptureStderr();
  EXPECT_EQ(reader.find("a"), nullptr);
  reader.put("b", record(2, false));
  EXPECT_TRUE(reader.save());  // the damaged file is replaced, not warned about again
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find(reader.path()), std::string::npos) << err;
  EXPECT_NE(err.find("checksum"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;

  PlanStore again(dir_.string(), kIdentity);
  EXPECT_EQ(again.find("a"), nullptr);
  ASSERT_NE(again.find("b"), nullptr);
}

TEST_F(PlanStoreTest, TruncatedFileIsIgnored) {
  PlanStore writer(dir_.string(), kIdentity);
  writer.put("a", record(1, true, std::string(1000, 'p')));
  ASSERT_TRUE(writer.save());
  std::vector<uint8_t> bytes = read_bytes(writer.path());
  bytes.resize(bytes.size() - 100);
  write_bytes(writer.path(), bytes);
  PlanStore reader(dir_.string(), kIdentity);
  testing::internal::CaptureStderr();
  EXPECT_EQ(reader.find("a"), nullptr);
  EXPECT_NE(testing::internal::GetCapturedStderr().find(reader.path()), std::string::npos);
}

TEST_F(PlanStoreTest, UnwritableFolderWarnsOnceAndTheRunGoesOn) {
  const std::filesystem::path blocker = dir_ / "not_a_folder";
  write_bytes(blocker.string(), {1, 2, 3});  // a file where the folder should be
  PlanStore store((blocker / "cache").string(), kIdentity);
  store.put("a", record(1, true));
  testing::internal::CaptureStderr();
  EXPECT_FALSE(store.save());
  store.put("b", record(2, true));
  EXPECT_FALSE(store.save());
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("cannot save"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  ASSERT_NE(store.find("a"), nullptr);  // still served from memory
}

TEST(PlanStoreNames, OneFilePerIdentity) {
  PlanStore a("/cache", kIdentity), b("/cache", kIdentity + "x");
  EXPECT_NE(a.path(), b.path());
  EXPECT_EQ(a.path(), PlanStore("/cache", kIdentity).path());
  EXPECT_EQ(a.path().rfind("/cache/plans-", 0), 0u) << a.path();
}

}  // namespace
}  // namespace sb

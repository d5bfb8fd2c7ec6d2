// The tar shard reader and writer, and WebDataset's grouping of members into samples.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "data/image/shard_samples.h"
#include "data/image/tar_header.h"
#include "data/image/tar_reader.h"
#include "data/image/tar_writer.h"
#include "scratch_dir.h"
#include "user_error_text.h"

namespace sb {
namespace {

using Bytes = std::vector<uint8_t>;
using sb::testing::refusal;

Bytes bytes_of(const std::string& s) { return Bytes(s.begin(), s.end()); }

Bytes file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_bytes(const std::filesystem::path& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

std::vector<TarMember> read_all(const std::string& path, size_t buffer = kTarReadBuffer) {
  TarReader reader(path, buffer);
  std::vector<TarMember> members;
  TarMember m;
  while (reader.next(m)) members.push_back(m);
  return members;
}

// Appends a header block (and the data, padded) made by format_tar_header.
void append_member(Bytes& tar, const std::string& name, const Bytes& data, char type) {
  uint8_t block[kTarBlock];
  format_tar_header(block, name, data.size(), type);
  tar.insert(tar.end(), block, block + kTarBlock);
  tar.insert(tar.end(), data.begin(), data.end());
  tar.resize(tar_padded_size(tar.size()), 0);
}

using TarShards = test::ScratchDirTest;

TEST_F(TarShards, ReaderReadsBackWhatTheWriterWroteLongNamesIncluded) {
  const std::string long_name = std::string(150, 'd') + "/" + std::string(120, 'n') + ".jpg";
  const std::vector<std::pair<std::string, Bytes>> members = {
      {"00000000.jpg", bytes_of("jpeg bytes")}, {"00000000.cls", bytes_of("7")},
      {long_name, Bytes(1000, 0xAB)},           {"empty.txt", {}},
      {std::string(100, 'x'), Bytes(512, 1)}};
  const std::string path = (dir_ / "a.tar").string();
  TarWriter writer(path);
  for (const auto& [name, data] : members) writer.add(name, data);
  writer.finish();
  EXPECT_EQ(std::filesystem::file_size(path) % kTarBlock, 0u);
  for (size_t buffer : {size_t{512}, size_t{1536}, kTarReadBuffer}) {  // block-sized reads and one read for all
    const std::vector<TarMember> read = read_all(path, buffer);
    ASSERT_EQ(read.size(), members.size());
    for (size_t i = 0; i < read.size(); ++i) {
      EXPECT_EQ(read[i].name, members[i].first);
      EXPECT_EQ(read[i].data, members[i].second);
    }
    EXPECT_EQ(read[0].offset, 0u);
    EXPECT_EQ(read[1].offset, 1024u);
  }
}

TEST_F(TarShards, WriterNeverOverwrites) {
  const std::string path = (dir_ / "a.tar").string();
  write_bytes(path, bytes_of("precious"));
  EXPECT_EQ(refusal([&] { TarWriter w(path); }), "'" + path + "' exists already; scalebench never overwrites a shard");
  EXPECT_EQ(file_bytes(path), bytes_of("precious"));
}

TEST_F(TarShards, PaxPathAndSizeOverrideTheHeaderAndDirectoriesAreSkipped) {
  Bytes tar;
  append_member(tar, "dir", {}, kTarDirectory);
  const std::string record = "path=deep/pax name.png\n";
  const std::string pax = std::to_string(record.size() + 3) + " " + record;  // "26 path=...\n"
  append_member(tar, "PaxHeaders/x", bytes_of(pax), kTarPaxHeader);
  append_member(tar, "short.png", bytes_of("png"), kTarRegular);
  append_member(tar, "after.cls", bytes_of("3"), kTarRegular);
  tar.resize(tar.size() + 2 * kTarBlock, 0);
  write_bytes(dir_ / "p.tar", tar);
  const std::vector<TarMember> read = read_all((dir_ / "p.tar").string());
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(read[0].name, "deep/pax name.png");
  EXPECT_EQ(read[0].offset, 512u);  // the pax header's
  EXPECT_EQ(read[0].data, bytes_of("png"));
  EXPECT_EQ(read[1].name, "after.cls");
}

TEST_F(TarShards, EmptyLongNameGivesAnEmptyName) {
  Bytes tar;
  append_member(tar, "././@LongLink", {}, kTarGnuLongName);
  append_member(tar, "header-name.jpg", bytes_of("J"), kTarRegular);
  write_bytes(dir_ / "l.tar", tar);
  const std::vector<TarMember> read = read_all((dir_ / "l.tar").string());
  ASSERT_EQ(read.size(), 1u);
  EXPECT_EQ(read[0].name, "");
}

TEST_F(TarShards, EndOfFileAtAHeaderIsTheEndEvenWithoutZeroBlocks) {
  Bytes tar;
  append_member(tar, "a.cls", bytes_of("1"), kTarRegular);
  write_bytes(dir_ / "e.tar", tar);
  EXPECT_EQ(read_all((dir_ / "e.tar").string()).size(), 1u);
}

TEST_F(TarShards, ShardCutShortNamesTheShardAndTheOffset) {
  Bytes tar;
  append_member(tar, "a.jpg", Bytes(2000, 5), kTarRegular);
  append_member(tar, "a.cls", bytes_of("1"), kTarRegular);
  const std::string path = (dir_ / "cut.tar").string();
  write_bytes(path, Bytes(tar.begin(), tar.begin() + 1000));  // inside a.jpg's data
  EXPECT_EQ(refusal([&] { read_all(path); }), "tar shard '" + path + "' at byte 0: member 'a.jpg' claims 2000 bytes but the "
                                               "file ends 488 bytes after its header (the shard is cut short)");
  write_bytes(path, Bytes(tar.begin(), tar.begin() + 2560 + 100));  // inside a.cls's header
  EXPECT_EQ(refusal([&] { read_all(path); }),
            "tar shard '" + path + "' at byte 2560: a header block is cut short (100 of 512 bytes; the shard is truncated)");
}

TEST_F(TarShards, NotATarFile) {
  const std::string path = (dir_ / "n.tar").string();
  write_bytes(path, Bytes(600, 'x'));
  EXPECT_EQ(refusal([&] { read_all(path); }),
            "tar shard '" + path + "' at byte 0: a header block with no valid checksum field (not a tar file?)");
  EXPECT_EQ(refusal([&] { read_all((dir_ / "missing.tar").string()); }),
            "cannot open tar shard '" + (dir_ / "missing.tar").string() + "': No such file or directory");
}

TEST(SampleNames, KeyIsTheNameUpToTheFirstDotOfTheBaseName) {
  std::string key, ext;
  ASSERT_TRUE(split_sample_name("a.b/0001.seg.png", key, ext));
  EXPECT_EQ(key, "a.b/0001");
  EXPECT_EQ(ext, "seg.png");
  EXPECT_FALSE(split_sample_name("dir/README", key, ext));
  EXPECT_FALSE(split_sample_name(".hidden", key, ext));
}

TEST(SampleNames, ClassIndexIsDecimal) {
  EXPECT_EQ(parse_class_index(bytes_of("42"), "w"), 42);
  EXPECT_EQ(parse_class_index(bytes_of(" 7\n"), "w"), 7);
  EXPECT_EQ(refusal([] { parse_class_index(bytes_of("-1"), "w"); }),
            "w: the class label '-1' is not a non-negative decimal integer (a .cls member holds e.g. '3')");
  EXPECT_NE(refusal([] { parse_class_index(bytes_of("99999999999"), "w"); }), "");
  EXPECT_NE(refusal([] { parse_class_index({}, "w"); }), "");
}

TEST_F(TarShards, SamplesGroupConsecutiveMembersOfOneKey) {
  const std::string path = (dir_ / "s.tar").string();
  TarWriter writer(path);
  writer.add("000.jpg", bytes_of("J0"));
  writer.add("000.cls", bytes_of("3"));
  writer.add("000.json", bytes_of("{}"));  // other extensions are ignored
  writer.add("README", bytes_of("no key"));
  writer.add("001.cls", bytes_of("0"));
  writer.add("001.PNG", bytes_of("P1"));
  writer.finish();
  ShardSampleReader reader(path);
  ShardSample s;
  ASSERT_TRUE(reader.next(s));
  EXPECT_EQ(s.key, "000");
  EXPECT_EQ(s.image, bytes_of("J0"));
  EXPECT_EQ(s.label, 3);
  ASSERT_TRUE(reader.next(s));
  EXPECT_EQ(s.key, "001");
  EXPECT_EQ(s.image_member, "001.PNG");
  EXPECT_EQ(s.label, 0);
  EXPECT_FALSE(reader.next(s));
}

TEST_F(TarShards, SampleWithoutLabelOrImageOrWithTwoImages) {
  const auto shard = [&](const std::vector<std::pair<std::string, std::string>>& members) {
    const std::string path = (dir_ / "bad.tar").string();
    std::filesystem::remove(path);
    TarWriter writer(path);
    for (const auto& [name, data] : members) writer.add(name, bytes_of(data));
    writer.finish();
    return refusal([&] {
      ShardSampleReader reader(path);
      ShardSample s;
      while (reader.next(s)) {
      }
    });
  };
  const std::string where = "tar shard '" + (dir_ / "bad.tar").string() + "', ";
  EXPECT_EQ(shard({{"a.jpg", "J"}, {"a.cls", "1"}, {"b.jpg", "J"}}),
            where + "sample 'b' at byte 2048 has no class label (b.cls)");
  EXPECT_EQ(shard({{"a.cls", "1"}}), where + "sample 'a' at byte 0 has no image (a.jpg, .jpeg or .png)");
  EXPECT_EQ(shard({{"a.jpg", "J"}, {"a.png", "P"}, {"a.cls", "1"}}),
            where + "member 'a.png' at byte 1024: sample 'a' has a second image (after 'a.jpg'); a sample holds one");
}

}  // namespace
}  // namespace sb

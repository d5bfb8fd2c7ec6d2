// Writes valid plan-cache files through sb::encode_plan_file (the writer scalebench uses), each prefixed
// with the mode byte of fuzz_plan_store_reader, as that target's seed corpus.
//   make_plan_store_seed OUT_DIR
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "nn/plan_store.h"

namespace {

using namespace sb;

void write_seed(const std::filesystem::path& dir, const std::string& name, uint8_t mode, const std::vector<uint8_t>& bytes) {
  std::ofstream out(dir / name, std::ios::binary | std::ios::trunc);
  out.put(static_cast<char>(mode));
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) {
    std::fprintf(stderr, "make_plan_store_seed: cannot write %s\n", (dir / name).c_str());
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_plan_store_seed OUT_DIR\n");
    return 2;
  }
  const std::filesystem::path dir(argv[1]);
  std::filesystem::create_directories(dir);
  const std::string identity = DeviceIdentity{"NVIDIA H100 80GB HBM3", 132, 90, 12080, 12080, 91900}.str();

  PlanEntries entries;
  entries["conv_fprop|x=256,16,32,32|w=64,16,3,3|bf16|nhwc"] = {{12, {{2, 3}, {14, 4}, {43, 0}}}, true, 0.125f, "", ""};
  entries["bn_relu_fwd|c=64|bf16"] = {{5, {}}, false, 0.0f, "{\"engine\":5,\"rtc\":\"...\"}", "0123abcd"};
  const std::vector<uint8_t> two = encode_plan_file(identity, entries);
  const std::vector<uint8_t> empty = encode_plan_file(identity, {});
  for (uint8_t mode = 0; mode < 4; ++mode) {
    write_seed(dir, "two_entries_mode" + std::to_string(mode), mode, two);
    write_seed(dir, "empty_mode" + std::to_string(mode), mode, empty);
  }
  // An agreed choice's words, read by mode bit 1.
  const std::vector<int32_t> words = encode_choice(entries.begin()->second.choice);
  std::vector<uint8_t> word_bytes(words.size() * 4);
  std::memcpy(word_bytes.data(), words.data(), word_bytes.size());
  write_seed(dir, "choice_words", 2, word_bytes);
  return 0;
}

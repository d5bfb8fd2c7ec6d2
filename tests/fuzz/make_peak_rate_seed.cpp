// Writes small valid peak-rate cache files through sb::encode_peak_rate (the writer scalebench uses), each
// prefixed with a mode byte of fuzz_peak_rate_reader, as that target's seed corpus.
//   make_peak_rate_seed OUT_DIR
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "train/engines/peak_rate_cache.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_peak_rate_seed OUT_DIR\n");
    return 2;
  }
  const std::filesystem::path dir(argv[1]);
  std::filesystem::create_directories(dir);
  const std::string key = "gpu NVIDIA H100 80GB HBM3\nsms 132\ncompute_capability 9.0\nclock_khz 1980000\ndriver 13000\ncuda_runtime 13000\n"
                          "cublas 13.0.2\ndtype bf16\ntf32 off\ngemm 8192\n";
  int written = 0;
  for (uint8_t mode = 0; mode < 2; ++mode)
    for (const auto& [name, text, rate] : {std::tuple{"bf16", key, 712.5}, std::tuple{"empty_key", std::string(), 1.0}}) {
      const std::vector<uint8_t> bytes = sb::encode_peak_rate(text, rate);
      const std::filesystem::path path = dir / (std::string(name) + "_mode" + std::to_string(mode));
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      out.put(static_cast<char>(mode));
      out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
      if (!out) {
        std::fprintf(stderr, "make_peak_rate_seed: cannot write %s\n", path.c_str());
        return 1;
      }
      ++written;
    }
  return written > 0 ? 0 : 1;
}

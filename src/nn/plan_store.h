// The on-disk cuDNN plan cache: which engine (and knob choices) runs each graph on one kind of device, so
// that a later process skips the plan search and the autotuning. Plain C++ (no CUDA): the CUDA plan
// cache (src/nn/cuda/plan_cache.h) fills and reads it; the format, its checks and the merge of several
// writers live here so that they are tested and fuzzed without a GPU.
//
// One file per device identity (GPU model, SM count, compute capability, driver, CUDA and cuDNN
// versions), named by a hash of that identity. Layout (integers little-endian):
//   "SBPLANS1"  u32 format version  u32 len + identity  u32 entry count
//   per entry:  u32 len + graph key  i64 engine  u32 knob count + (i64 type, i64 value)...  i64 occurrence
//               u8 tuned  f32 ms  u32 len + serialised plan  u32 len + the build that serialised it
//   u32 crc32 (zlib) of every byte before it
// A file is replaced by writing a unique temporary in the same folder and renaming it over the old one,
// so a reader sees the old file or the new one, never half of one. A writer re-reads the file and merges
// under an advisory lock, so that processes sharing the folder keep each other's entries.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace sb {

// A knob of a cuDNN engine (cudnnBackendKnobType_t) and the value chosen for it.
struct PlanKnob {
  int64_t type = 0;
  int64_t value = 0;
  bool operator==(const PlanKnob&) const = default;
};

// An engine configuration by name rather than by position in a heuristics list: the engine's global
// index and its knob choices. engine < 0 means "no engine".
struct PlanChoice {
  int64_t engine = -1;
  std::vector<PlanKnob> knobs;
  // Which of the heuristics' configurations with this engine and these knobs, counted from 0 in their
  // order: cuDNN may propose one engine and knob set several times, with settings that no knob shows, and
  // those run at different speeds (docs/cudnn.md, "The plan cache").
  int64_t occurrence = 0;
  bool operator==(const PlanChoice&) const = default;
  std::string str() const;  // e.g. "eng12{2=3,14=4}", and "eng62{}#1" for a second occurrence
};

// A choice as 32-bit words, for an agreement that carries one int at a time; the first word is the count
// of the words after it. decode_choice returns nullopt for words that no encode_choice produced.
std::vector<int32_t> encode_choice(const PlanChoice& choice);
std::optional<PlanChoice> decode_choice(const std::vector<int32_t>& words);

struct PlanRecord {
  PlanChoice choice;
  bool tuned = false;  // chosen by timing candidates (else the heuristics' first that ran)
  float ms = 0.0f;     // the chosen plan's time per execution when tuned
  std::string plan;    // cuDNN's serialised execution plan, when the engine allows it; may be empty
  std::string plan_build;  // the build (commit) that serialised it: the plan embeds our operation graph,
                           // which another build may construct differently, so only that build uses it
  bool operator==(const PlanRecord&) const = default;
};

using PlanEntries = std::map<std::string, PlanRecord>;

// The facts that decide whether a plan chosen on one machine is valid, and best, on another.
struct DeviceIdentity {
  std::string gpu;  // e.g. "NVIDIA H100 80GB HBM3"
  int sm_count = 0;
  int compute_capability = 0;  // major * 10 + minor
  int driver = 0;              // cudaDriverGetVersion
  int cuda_runtime = 0;        // cudaRuntimeGetVersion
  int64_t cudnn = 0;           // cudnnGetVersion
  std::string str() const;
};

// Version 1 had no occurrence; its files are ignored (with one warning) and rewritten.
constexpr uint32_t kPlanFileVersion = 2;

// The bytes of a plan file, and their inverse. decode_plan_file returns nullopt, with the reason in *why,
// for anything malformed: bad magic or version, a checksum mismatch, a truncated or oversized field,
// duplicate keys, bytes after the checksum. It never trusts a length before checking it against what is
// left.
std::vector<uint8_t> encode_plan_file(const std::string& identity, const PlanEntries& entries);
struct PlanFile {
  std::string identity;
  PlanEntries entries;
};
std::optional<PlanFile> decode_plan_file(const uint8_t* data, size_t size, std::string* why);

// The default cache folder: $XDG_CACHE_HOME/scalebench when XDG_CACHE_HOME is an absolute path, else
// $HOME/.cache/scalebench; empty (no cache) when neither is set.
std::string default_plan_cache_dir();

// The plan file of one device identity in one folder.
class PlanStore {
 public:
  PlanStore(std::string folder, std::string identity);

  const std::string& path() const { return path_; }
  // The stored record of a graph key, reading the file on first use. A missing file is an empty cache; a
  // malformed or foreign one is too, after one warning naming the file.
  const PlanRecord* find(const std::string& key);
  // Records an entry, kept in memory until save().
  void put(const std::string& key, const PlanRecord& record);
  size_t pending() const { return pending_.size(); }
  // Merges the pending entries into the file as it is now (another process may have written since it was
  // read) and replaces it atomically; an entry on disk is kept over an untuned pending one, and over a
  // tuned one of the same choice, and a file that would not change is not written. Returns false, after
  // one warning, when the folder or file cannot be written: the run goes on without saving.
  bool save();

 private:
  PlanEntries read_file(bool warn);  // what the file holds for this identity (empty when absent or bad)
  void warn_once(const std::string& message);

  std::string folder_, identity_, path_;
  bool loaded_ = false;
  bool write_failed_ = false;
  PlanEntries entries_;                 // the file's entries plus the pending ones
  std::set<std::string> pending_;       // keys put() since the last save
  std::set<std::string> warned_;        // one warning per kind of problem and file
};

}  // namespace sb

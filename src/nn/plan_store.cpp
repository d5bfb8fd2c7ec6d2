#include "nn/plan_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "core/byte_format.h"
#include "core/cache_file.h"
#include "core/checksums.h"
#include "core/log.h"

namespace sb {

namespace {

constexpr char kMagic[8] = {'S', 'B', 'P', 'L', 'A', 'N', 'S', '1'};
// Bounds no honest file comes near; a length beyond them marks the file as damaged before any allocation.
constexpr uint32_t kMaxIdentity = 4096;
constexpr uint32_t kMaxKey = 1 << 16;
constexpr uint32_t kMaxKnobs = 256;
constexpr int64_t kMaxOccurrence = 1 << 16;
constexpr uint32_t kMaxPlanBytes = 16u << 20;
constexpr CacheFileKind kPlanCache{"cuDNN plan cache", "", "plans are not kept for later runs", uint64_t{256} << 20};
// Each entry takes at least this many bytes, which bounds the entry count by the file's size.
constexpr size_t kMinEntryBytes = 4 + 8 + 4 + 8 + 1 + 4 + 4 + 4;

std::optional<PlanFile> fail(std::string* why, const std::string& reason) {
  if (why) *why = reason;
  return std::nullopt;
}

// An advisory lock (POSIX record lock, which NFS and Lustre honour) held while a writer merges. It is
// only a courtesy: without it (a file system that refuses locks, or a holder that never lets go) the
// writer goes on, and at worst an entry written at the same instant by another process is lost.
class MergeLock {
 public:
  explicit MergeLock(const std::string& path) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) return;
    struct flock lock{};
    lock.l_type = F_WRLCK;
    lock.l_whence = SEEK_SET;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (::fcntl(fd_, F_SETLK, &lock) != 0) {
      if ((errno != EACCES && errno != EAGAIN) || std::chrono::steady_clock::now() > deadline) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  ~MergeLock() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the lock
  }
  MergeLock(const MergeLock&) = delete;
  MergeLock& operator=(const MergeLock&) = delete;

 private:
  int fd_ = -1;
};

ByteWriter plan_file(const std::string& identity, const PlanEntries& entries) {
  ByteWriter w;
  w.raw(kMagic, sizeof kMagic);
  w.u32(kPlanFileVersion);
  w.text(identity);
  w.u32(static_cast<uint32_t>(entries.size()));
  for (const auto& [key, r] : entries) {
    w.text(key);
    w.i64(r.choice.engine);
    w.u32(static_cast<uint32_t>(r.choice.knobs.size()));
    for (const PlanKnob& k : r.choice.knobs) {
      w.i64(k.type);
      w.i64(k.value);
    }
    w.i64(r.choice.occurrence);
    w.u8(r.tuned ? 1 : 0);
    w.f32(r.ms);
    w.text(r.plan);
    w.text(r.plan_build);
  }
  w.crc32_from(0);
  return w;
}

}  // namespace

std::string PlanChoice::str() const {
  std::string s = "eng" + std::to_string(engine) + "{";
  for (size_t i = 0; i < knobs.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(knobs[i].type);
    s += '=';
    s += std::to_string(knobs[i].value);
  }
  s += '}';
  if (occurrence != 0) {
    s += '#';
    s += std::to_string(occurrence);
  }
  return s;
}

std::vector<int32_t> encode_choice(const PlanChoice& c) {
  // Each 64-bit field as two words (low, high), so that no value is cut short.
  std::vector<int32_t> w{0};
  auto put = [&w](int64_t v) {
    const auto u = static_cast<uint64_t>(v);
    w.push_back(static_cast<int32_t>(static_cast<uint32_t>(u)));
    w.push_back(static_cast<int32_t>(static_cast<uint32_t>(u >> 32)));
  };
  put(c.engine);
  put(c.occurrence);
  put(static_cast<int64_t>(c.knobs.size()));
  for (const PlanKnob& k : c.knobs) {
    put(k.type);
    put(k.value);
  }
  w[0] = static_cast<int32_t>(w.size() - 1);
  return w;
}

std::optional<PlanChoice> decode_choice(const std::vector<int32_t>& w) {
  if (w.size() < 7 || w[0] != static_cast<int32_t>(w.size() - 1) || (w.size() - 7) % 4 != 0) return std::nullopt;
  auto get = [&w](size_t at) {
    return static_cast<int64_t>(static_cast<uint64_t>(static_cast<uint32_t>(w[at])) |
                                (static_cast<uint64_t>(static_cast<uint32_t>(w[at + 1])) << 32));
  };
  PlanChoice c;
  c.engine = get(1);
  c.occurrence = get(3);
  const int64_t knobs = get(5);
  if (c.occurrence < 0 || knobs < 0 || static_cast<size_t>(knobs) != (w.size() - 7) / 4) return std::nullopt;
  for (int64_t i = 0; i < knobs; ++i) {
    const size_t at = 7 + 4 * static_cast<size_t>(i);
    c.knobs.push_back({get(at), get(at + 2)});
  }
  return c;
}

std::string DeviceIdentity::str() const {
  return gpu + "|sm_count=" + std::to_string(sm_count) + "|cc=" + std::to_string(compute_capability) +
         "|driver=" + std::to_string(driver) + "|cuda=" + std::to_string(cuda_runtime) +
         "|cudnn=" + std::to_string(cudnn);
}

std::vector<uint8_t> encode_plan_file(const std::string& identity, const PlanEntries& entries) {
  return plan_file(identity, entries).take();
}

std::optional<PlanFile> decode_plan_file(const uint8_t* data, size_t size, std::string* why) {
  if (size < sizeof kMagic + 4 + 4 + 4 + 4) return fail(why, "too short to be a plan file");
  if (std::memcmp(data, kMagic, sizeof kMagic) != 0) return fail(why, "not a plan file (bad magic)");
  if (!has_trailing_crc32(data, size)) return fail(why, "checksum mismatch (damaged or truncated)");

  ByteReader r(data + sizeof kMagic, size - sizeof kMagic - 4);
  // A field the reader refused: the reader says where and why.
  auto bad = [&](const std::string& what) { return fail(why, r.error().empty() ? what : what + " (" + r.error() + ")"); };
  uint32_t version = 0, count = 0;
  PlanFile file;
  r.u32(&version);
  if (version != kPlanFileVersion)
    return fail(why, "format version " + std::to_string(version) + ", expected " + std::to_string(kPlanFileVersion));
  if (!r.text(&file.identity, kMaxIdentity)) return bad("bad device identity field");
  if (!r.u32(&count) || count > r.left() / kMinEntryBytes) return bad("bad entry count");
  for (uint32_t i = 0; i < count; ++i) {
    const std::string at = "entry " + std::to_string(i) + ": ";
    std::string key;
    PlanRecord rec;
    uint32_t knobs = 0;
    uint8_t tuned = 0;
    if (!r.text(&key, kMaxKey) || key.empty()) return bad(at + "bad graph key");
    if (!r.i64(&rec.choice.engine) || rec.choice.engine < 0) return bad(at + "bad engine index");
    if (!r.u32(&knobs) || knobs > kMaxKnobs || knobs > r.left() / 16) return bad(at + "bad knob count");
    for (uint32_t k = 0; k < knobs; ++k) {
      PlanKnob knob;
      r.i64(&knob.type);
      r.i64(&knob.value);
      rec.choice.knobs.push_back(knob);
    }
    if (!r.i64(&rec.choice.occurrence) || rec.choice.occurrence < 0 || rec.choice.occurrence > kMaxOccurrence)
      return bad(at + "bad occurrence");
    if (!r.u8(&tuned) || tuned > 1) return bad(at + "bad tuned flag");
    rec.tuned = tuned == 1;
    if (!r.f32(&rec.ms) || !(rec.ms >= 0.0f && rec.ms < 1e9f)) return bad(at + "bad time");
    if (!r.text(&rec.plan, kMaxPlanBytes)) return bad(at + "bad serialised plan field");
    if (!r.text(&rec.plan_build, kMaxKey)) return bad(at + "bad plan build field");
    if (!file.entries.emplace(std::move(key), std::move(rec)).second) return fail(why, at + "duplicate graph key");
  }
  if (r.left() != 0) return fail(why, std::to_string(r.left()) + " unexpected bytes after the last entry");
  return file;
}

std::string default_plan_cache_dir() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && xdg[0] == '/') return std::string(xdg) + "/scalebench";  // the XDG spec ignores relative paths
  const char* home = std::getenv("HOME");
  if (home && home[0] != '\0') return std::string(home) + "/.cache/scalebench";
  return "";
}

PlanStore::PlanStore(std::string folder, std::string identity)
    : folder_(std::move(folder)), identity_(std::move(identity)) {
  path_ = (std::filesystem::path(folder_) / ("plans-" + name_digest(identity_) + ".sbplans")).string();
}

void PlanStore::warn_once(const std::string& message) {
  if (!warned_.insert(message.substr(0, message.find(':'))).second) return;
  log_all("warning: %s\n", message.c_str());
}

PlanEntries PlanStore::read_file(bool warn) {
  std::string why;
  std::optional<PlanFile> file = read_cache_file<PlanFile>(kPlanCache, path_, decode_plan_file, &why);
  if (file && file->identity == identity_) return std::move(file->entries);
  if (file) why = "written for another device or software (" + file->identity + ")";
  if (!why.empty() && warn) warn_once(ignored_cache_file(kPlanCache, path_, why));  // empty: no file yet
  return {};
}

const PlanRecord* PlanStore::find(const std::string& key) {
  if (!loaded_) {
    loaded_ = true;
    PlanEntries on_disk = read_file(/*warn=*/true);
    for (auto& [k, r] : on_disk) entries_.emplace(k, std::move(r));  // put() before the first read wins
  }
  auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : &it->second;
}

void PlanStore::put(const std::string& key, const PlanRecord& record) {
  entries_[key] = record;
  pending_.insert(key);
}

bool PlanStore::save() {
  if (pending_.empty()) return true;
  if (write_failed_) return false;
  std::error_code ec;
  std::filesystem::create_directories(folder_, ec);
  std::string error = ec ? "cannot create the folder: " + ec.message() : "";
  if (error.empty()) {
    MergeLock lock(path_ + ".lock");
    PlanEntries merged = read_file(/*warn=*/!loaded_);  // a damaged file was already reported when loaded
    bool changed = false;
    for (const std::string& key : pending_) {
      const PlanRecord& mine = entries_.at(key);
      auto it = merged.find(key);
      // What is on disk stays when it is as good: any entry against an untuned one, and the same tuned
      // choice (another rank's, timed there) against a tuned one.
      if (it != merged.end() && (!mine.tuned || (it->second.tuned && it->second.choice == mine.choice))) continue;
      merged[key] = mine;
      changed = true;
    }
    // Flushed to disk before the rename: a damaged file loses the other processes' entries too.
    if (changed) error = plan_file(identity_, merged).publish(path_, Flush::ToDisk);
    if (error.empty()) {
      for (auto& [k, r] : merged) entries_[k] = r;
      loaded_ = true;
    }
  }
  if (!error.empty()) {
    write_failed_ = true;
    warn_once(unsaved_cache_file(kPlanCache, path_, error));
    return false;
  }
  pending_.clear();
  return true;
}

}  // namespace sb

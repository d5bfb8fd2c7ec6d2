#include "train/checkpoint/checkpoint.h"

#include <hdf5.h>

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "core/check.h"
#include "core/error.h"
#include "h5/attributes.h"
#include "h5/handle.h"
#include "metrics/results_publish.h"

namespace sb {
namespace {

constexpr const char* kSchema = "scalebench-checkpoint";
constexpr int64_t kSchemaVersion = 2;  // 2: the data identity

// The seal: the HDF5 library does not survive corrupt files (it reads out of bounds, allocates what a
// corrupt size field says, loops forever: docs/fuzzing.md), so a checkpoint carries a checksum of its
// HDF5 content in its first 512 bytes (an HDF5 user block), and read_checkpoint checks it before HDF5
// sees the file. Layout: magic "SBCKPT01", then little-endian uint64 length of the HDF5 content (the
// bytes after the user block) and uint64 digest of it (CRC-32 in the high half, Adler-32 in the low),
// then zeros.
constexpr hsize_t kSealBytes = 512;
constexpr char kSealMagic[8] = {'S', 'B', 'C', 'K', 'P', 'T', '0', '1'};

void put_le64(unsigned char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}
uint64_t get_le64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t{p[i]} << (8 * i);
  return v;
}

// The digest of everything after the user block; false where the file can't be read to its end.
bool content_digest(std::istream& in, uint64_t length, uint64_t& digest) {
  in.seekg(static_cast<std::streamoff>(kSealBytes));
  uLong crc = crc32(0L, Z_NULL, 0), adler = adler32(0L, Z_NULL, 0);
  std::vector<char> chunk(size_t{1} << 20);
  for (uint64_t left = length; left > 0;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(left, chunk.size()));
    if (!in.read(chunk.data(), static_cast<std::streamsize>(n))) return false;
    crc = crc32(crc, reinterpret_cast<const Bytef*>(chunk.data()), static_cast<uInt>(n));
    adler = adler32(adler, reinterpret_cast<const Bytef*>(chunk.data()), static_cast<uInt>(n));
    left -= n;
  }
  digest = (uint64_t{crc} << 32) | (uint64_t{adler} & 0xFFFFFFFFu);
  return true;
}

void write_array(hid_t parent, const char* name, hid_t file_type, hid_t memory_type, const std::vector<hsize_t>& dims,
                 const void* data) {
  h5::Handle space = h5::Handle::dataspace(CHECK_HDF5(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr)));
  h5::Handle set = h5::Handle::dataset(CHECK_HDF5(H5Dcreate2(parent, name, file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)));
  CHECK_HDF5(H5Dwrite(set.get(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data));
}

void write_file(const std::string& path, const Checkpoint& c) {
  h5::init_hdf5();
  h5::Handle access = h5::unlocked_file_access();
  h5::Handle create = h5::Handle::property_list(CHECK_HDF5(H5Pcreate(H5P_FILE_CREATE)));
  CHECK_HDF5(H5Pset_userblock(create.get(), kSealBytes));  // room for the seal (seal_checkpoint)
  h5::Handle file = h5::Handle::file(CHECK_HDF5(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, create.get(), access.get())));
  const hid_t f = file.get();
  h5::write_string_attribute(f, "schema", kSchema);
  h5::write_int_attribute(f, "schema_version", kSchemaVersion);
  h5::write_string_attribute(f, "config_json", c.config_json);
  h5::write_int_attribute(f, "world_size", c.world_size);
  h5::write_int_attribute(f, "epoch", c.loop.epoch);
  h5::write_int_attribute(f, "step_in_epoch", c.loop.step_in_epoch);
  h5::write_int_attribute(f, "global_step", c.loop.global_step);
  h5::write_double_attribute(f, "elapsed_s", c.loop.elapsed_s);
  h5::write_double_attribute(f, "best_accuracy", c.loop.stop.best_accuracy);
  h5::write_int_attribute(f, "epochs_without_improvement", c.loop.stop.evaluations_without_improvement);
  h5::write_int_attribute(f, "evaluations_at_target", c.loop.stop.evaluations_at_target);
  if (std::isfinite(c.loop.target_reached_s)) h5::write_double_attribute(f, "target_reached_s", c.loop.target_reached_s);
  h5::write_int_attribute(f, "optimizer_steps", c.engine.optimizer_steps);
  h5::write_double_attribute(f, "loss_scale", c.engine.loss_scale);
  h5::write_int_attribute(f, "scale_growth", c.engine.scale_growth);
  h5::write_string_attribute(f, "data_spec", c.data.spec);
  h5::write_int_attribute(f, "data_train_samples", c.data.train_samples);
  h5::write_int_attribute(f, "data_test_samples", c.data.test_samples);
  h5::write_int_attribute(f, "data_labels_crc32", c.data.labels_crc32);

  const auto& p = c.engine.params;
  write_array(f, "params", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, {p.size()}, p.data());
  const hsize_t world = c.rank_buffers.size(), nb = world ? c.rank_buffers[0].size() : 0;
  std::vector<float> buffers;
  for (const auto& b : c.rank_buffers) buffers.insert(buffers.end(), b.begin(), b.end());
  write_array(f, "buffers", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, {world, nb}, buffers.data());
  std::vector<double> totals;
  for (const auto& t : c.rank_totals) {
    totals.push_back(t.loss_sum);
    totals.push_back(static_cast<double>(t.correct));
    totals.push_back(static_cast<double>(t.count));
  }
  write_array(f, "train_totals", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, {c.rank_totals.size(), 3}, totals.data());
  h5::Handle group = h5::Handle::group(CHECK_HDF5(H5Gcreate2(f, "optimizer", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)));
  std::vector<std::string> order;
  for (const auto& [name, values] : c.engine.optimizer_state) {
    write_array(group.get(), name.c_str(), H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, {values.size()}, values.data());
    order.push_back(name);
  }
  h5::write_string_list_attribute(group.get(), "order", order);
  CHECK_HDF5(H5Fflush(f, H5F_SCOPE_GLOBAL));
}

// Reading: every failure is the user's file, so it becomes a UserError instead of aborting the job. The
// file may be anything (truncated, corrupt, hostile: tests/fuzz/fuzz_checkpoint_reader.cpp), so this
// path uses none of the aborting helpers (CHECK_HDF5, h5::Handle, h5::read_*_attribute): every HDF5
// call is checked here, every type, shape and size is checked before anything is read or allocated.

// Owns an identifier of the reading path. Closing never aborts: an object of a corrupt file may fail
// to close, and the UserError on its way out says what is wrong.
class ReadHandle {
 public:
  using Closer = herr_t (*)(hid_t);
  ReadHandle(hid_t id, Closer closer) : id_(id), closer_(closer) {}
  ~ReadHandle() {
    if (id_ >= 0) closer_(id_);
  }
  ReadHandle(const ReadHandle&) = delete;
  ReadHandle& operator=(const ReadHandle&) = delete;
  hid_t get() const { return id_; }

 private:
  hid_t id_;
  Closer closer_;
};

std::string shortest(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", x);
  return text;
}

// An optimizer has a handful of state buffers (Adam: 2); a longer `order` list is not ours.
constexpr hssize_t kMaxOptimizerStates = 64;

struct Reader {
  std::string path;
  uint64_t file_bytes = 0;  // no dataset or attribute of ours holds more bytes than the file

  [[noreturn]] void bad(const std::string& what) const {
    throw UserError("checkpoint " + path + " " + what + "; pass a file written by scalebench --checkpoint-every or a signal");
  }
  hid_t must(hid_t id, const std::string& what) const {
    if (id < 0) bad("has no readable " + what);
    return id;
  }
  ReadHandle type_of_attribute(hid_t attribute, const std::string& name) const {
    return {must(H5Aget_type(attribute), "type of attribute '" + name + "'"), H5Tclose};
  }
  hssize_t points_of_attribute(hid_t attribute, const std::string& name) const {
    ReadHandle space(must(H5Aget_space(attribute), "shape of attribute '" + name + "'"), H5Sclose);
    const hssize_t points = H5Sget_simple_extent_npoints(space.get());
    if (points < 0) bad("has no readable shape of attribute '" + name + "'");
    return points;
  }

  bool has_attribute(hid_t object, const char* name) const {
    const htri_t exists = H5Aexists(object, name);
    if (exists < 0) bad(std::string("has no readable attributes (looking for '") + name + "')");
    return exists > 0;
  }
  ReadHandle open_attribute(hid_t object, const char* name) const {
    if (!has_attribute(object, name)) bad(std::string("lacks the attribute '") + name + "'");
    return {must(H5Aopen(object, name, H5P_DEFAULT), std::string("attribute '") + name + "'"), H5Aclose};
  }

  // One number stored as one of the given type classes, converted by HDF5 to memory_type.
  void number_attr(hid_t object, const char* name, H5T_class_t want, H5T_class_t also, hid_t memory_type, void* value) const {
    ReadHandle attribute = open_attribute(object, name);
    ReadHandle type = type_of_attribute(attribute.get(), name);
    const H5T_class_t type_class = H5Tget_class(type.get());
    if ((type_class != want && type_class != also) || points_of_attribute(attribute.get(), name) != 1)
      bad(std::string("has an attribute '") + name + "' that is not a single number of the expected type");
    if (H5Aread(attribute.get(), memory_type, value) < 0) bad(std::string("has an unreadable attribute '") + name + "'");
  }
  int64_t int_attr(hid_t object, const char* name, int64_t lowest, int64_t highest) const {
    int64_t value = 0;
    number_attr(object, name, H5T_INTEGER, H5T_INTEGER, H5T_NATIVE_INT64, &value);
    if (value < lowest || value > highest)
      bad(std::string("has ") + name + " " + std::to_string(value) + ", outside " + std::to_string(lowest) + ".." +
          std::to_string(highest));
    return value;
  }
  double double_attr(hid_t object, const char* name, double lowest, double highest) const {
    double value = 0;
    number_attr(object, name, H5T_FLOAT, H5T_INTEGER, H5T_NATIVE_DOUBLE, &value);
    if (!(value >= lowest && value <= highest))  // NaN fails too
      bad(std::string("has ") + name + " " + shortest(value) + ", outside " + shortest(lowest) + ".." + shortest(highest));
    return value;
  }

  // Every string of an attribute, stored as variable- or fixed-length strings; at most max_count.
  std::vector<std::string> strings_attr(hid_t object, const char* name, hssize_t max_count) const {
    ReadHandle attribute = open_attribute(object, name);
    ReadHandle file_type = type_of_attribute(attribute.get(), name);
    if (H5Tget_class(file_type.get()) != H5T_STRING) bad(std::string("has an attribute '") + name + "' that holds no strings");
    const hssize_t count = points_of_attribute(attribute.get(), name);
    if (count > max_count)
      bad(std::string("has ") + std::to_string(count) + " strings in attribute '" + name + "', more than " +
          std::to_string(max_count));
    const htri_t variable = H5Tis_variable_str(file_type.get());
    if (variable < 0) bad(std::string("has no readable type of attribute '") + name + "'");
    std::vector<std::string> strings;
    if (variable > 0) {
      ReadHandle memory_type(must(H5Tcopy(H5T_C_S1), "string type"), H5Tclose);
      if (H5Tset_size(memory_type.get(), H5T_VARIABLE) < 0 || H5Tset_cset(memory_type.get(), H5T_CSET_UTF8) < 0)
        bad("has no readable string type");
      std::vector<char*> pointers(static_cast<size_t>(count) + 1, nullptr);
      const herr_t read = H5Aread(attribute.get(), memory_type.get(), pointers.data());
      for (char* p : pointers) {  // HDF5 allocated each string, also where it failed part way
        if (read >= 0) strings.emplace_back(p ? p : "");
        if (p) H5free_memory(p);
      }
      if (read < 0) bad(std::string("has an unreadable attribute '") + name + "'");
      strings.pop_back();  // the extra null pointer
    } else {
      const size_t width = H5Tget_size(file_type.get());
      if (width == 0 || width > file_bytes || static_cast<uint64_t>(count) > file_bytes / width)
        bad(std::string("has an attribute '") + name + "' larger than the file");
      ReadHandle memory_type(must(H5Tcopy(H5T_C_S1), "string type"), H5Tclose);
      if (H5Tset_size(memory_type.get(), width) < 0) bad("has no readable string type");
      std::vector<char> buffer(width * static_cast<size_t>(count) + 1, '\0');
      if (H5Aread(attribute.get(), memory_type.get(), buffer.data()) < 0)
        bad(std::string("has an unreadable attribute '") + name + "'");
      strings = h5::split_fixed_length_strings(buffer.data(), width, count);
    }
    return strings;
  }
  std::string string_attr(hid_t object, const char* name) const {
    std::vector<std::string> strings = strings_attr(object, name, 1);
    if (strings.size() != 1) bad(std::string("has an attribute '") + name + "' that is not one string");
    return strings.front();
  }

  // A dataset of `rank` dimensions whose stored type is a float of sizeof(T) bytes (what the writer
  // writes), in contiguous or compact storage (no filters: nothing decompresses to more than the file
  // holds), read into memory_type. Its size is checked against the file's before allocating.
  template <typename T>
  std::vector<T> array(hid_t parent, const std::string& name, hid_t memory_type, int rank, std::vector<hsize_t>& shape) const {
    ReadHandle set(must(H5Dopen2(parent, name.c_str(), H5P_DEFAULT), "dataset '" + name + "'"), H5Dclose);
    {
      ReadHandle type(must(H5Dget_type(set.get()), "type of '" + name + "'"), H5Tclose);
      if (H5Tget_class(type.get()) != H5T_FLOAT || H5Tget_size(type.get()) != sizeof(T))
        bad("has a dataset '" + name + "' that does not hold " + std::to_string(8 * sizeof(T)) + "-bit floats");
      ReadHandle create(must(H5Dget_create_plist(set.get()), "storage of '" + name + "'"), H5Pclose);
      const H5D_layout_t layout = H5Pget_layout(create.get());
      if ((layout != H5D_CONTIGUOUS && layout != H5D_COMPACT) || H5Pget_nfilters(create.get()) != 0)
        bad("has a dataset '" + name + "' in a storage layout scalebench does not write");
    }
    ReadHandle space(must(H5Dget_space(set.get()), "shape of '" + name + "'"), H5Sclose);
    if (H5Sget_simple_extent_ndims(space.get()) != rank) bad("has a malformed '" + name + "'");
    shape.assign(static_cast<size_t>(rank), 0);
    if (H5Sget_simple_extent_dims(space.get(), shape.data(), nullptr) != rank) bad("has a malformed '" + name + "'");
    // Stored uncompressed, a dataset can't hold more values than the file has bytes.
    const uint64_t most = file_bytes / sizeof(T);
    uint64_t n = 1;
    for (hsize_t d : shape) {
      if (d != 0 && n > most / d)
        bad("claims more values in '" + name + "' than the file's " + std::to_string(file_bytes) + " bytes hold");
      n *= d;
    }
    std::vector<T> out(static_cast<size_t>(n));
    if (n && H5Dread(set.get(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()) < 0) bad("has an unreadable '" + name + "'");
    return out;
  }
};

// A count stored as a double (train_totals): whole, not negative, exact in a double.
bool is_count(double x) { return x >= 0 && x <= 9007199254740992.0 && x == static_cast<double>(static_cast<int64_t>(x)); }

void check_is_a_file(const std::string& path) {
  std::error_code ec;
  const std::filesystem::file_status status = std::filesystem::status(path, ec);
  if (std::filesystem::is_directory(status))
    throw UserError("--resume " + path + " is a directory; give the checkpoint file itself (by default OUT.ckpt.h5 beside "
                    "the run's --out, or the --checkpoint it was given)");
  if (!std::filesystem::exists(status)) throw UserError("--resume " + path + ": no such file");
  if (!std::filesystem::is_regular_file(status)) throw UserError("--resume " + path + " is not a regular file; give the checkpoint file itself");
}

// The seal first: no byte of a corrupt file reaches the HDF5 library.
void check_seal(const Reader& r) {
  std::ifstream in(r.path, std::ios::binary);
  unsigned char header[kSealBytes] = {};
  if (!in || r.file_bytes < kSealBytes || !in.read(reinterpret_cast<char*>(header), sizeof header))
    r.bad("is too short to be a checkpoint (" + std::to_string(r.file_bytes) + " bytes)");
  if (std::memcmp(header, kSealMagic, sizeof kSealMagic) != 0)
    r.bad("is not a scalebench checkpoint (no SBCKPT01 header; checkpoints of scalebench before the header can't be resumed)");
  const uint64_t length = get_le64(header + 8), content = r.file_bytes - kSealBytes;
  if (length != content)
    r.bad("is " + std::string(length > content ? "truncated" : "longer than it was written") + ": it holds " +
          std::to_string(content) + " bytes after its header, which says " + std::to_string(length));
  uint64_t digest = 0;
  if (!content_digest(in, length, digest)) r.bad("can't be read to its end");
  if (digest != get_le64(header + 16)) r.bad("is corrupt: its content does not match the checksum it was written with");
}

ReadHandle open_checkpoint_file(const Reader& r) {
  if (H5Fis_hdf5(r.path.c_str()) <= 0) r.bad("is not an HDF5 file");
  ReadHandle access(r.must(H5Pcreate(H5P_FILE_ACCESS), "file access properties"), H5Pclose);
#if H5_VERSION_GE(1, 12, 1) || (H5_VERS_MAJOR == 1 && H5_VERS_MINOR == 10 && H5_VERS_RELEASE >= 7)
  H5Pset_file_locking(access.get(), false, true);  // as h5::unlocked_file_access, without its abort
#endif
  return ReadHandle(r.must(H5Fopen(r.path.c_str(), H5F_ACC_RDONLY, access.get()), "HDF5 structure"), H5Fclose);
}

void check_schema(const Reader& r, hid_t f) {
  if (!r.has_attribute(f, "schema") || r.string_attr(f, "schema") != kSchema) r.bad("is not a scalebench checkpoint");
  const int64_t version = r.int_attr(f, "schema_version", INT64_MIN, INT64_MAX);
  if (version == 1)
    throw UserError("checkpoint " + r.path + " was written by an older scalebench (checkpoint schema 1), which did not record "
                    "the data it trained on, so a resume could not check it; start the run again");
  if (version != kSchemaVersion) r.bad("has an unknown schema_version");
}

constexpr int64_t kIntMax = std::numeric_limits<int>::max(), kInt64Max = std::numeric_limits<int64_t>::max();
constexpr double kHuge = std::numeric_limits<double>::max();

// Where the loop stood, and the early-stopping rules' state.
void read_loop_state(const Reader& r, hid_t f, LoopState& loop) {
  // epoch + 1 is printed: keep it below the int maximum.
  loop.epoch = static_cast<int>(r.int_attr(f, "epoch", 0, kIntMax - 1));
  loop.step_in_epoch = r.int_attr(f, "step_in_epoch", 0, kInt64Max);
  loop.global_step = r.int_attr(f, "global_step", 0, kInt64Max);
  loop.elapsed_s = r.double_attr(f, "elapsed_s", 0, kHuge);
  loop.stop.best_accuracy = r.double_attr(f, "best_accuracy", 0, 1);
  loop.stop.evaluations_without_improvement = static_cast<int>(r.int_attr(f, "epochs_without_improvement", 0, kIntMax));
  // Absent from checkpoints of a scalebench that stopped at the first evaluation reaching the target.
  if (r.has_attribute(f, "evaluations_at_target"))
    loop.stop.evaluations_at_target = static_cast<int>(r.int_attr(f, "evaluations_at_target", 0, kIntMax));
  if (r.has_attribute(f, "target_reached_s")) loop.target_reached_s = r.double_attr(f, "target_reached_s", 0, kHuge);
}

void read_data_identity(const Reader& r, hid_t f, DataIdentity& data) {
  data.spec = r.string_attr(f, "data_spec");
  data.train_samples = r.int_attr(f, "data_train_samples", 0, kInt64Max);
  data.test_samples = r.int_attr(f, "data_test_samples", 0, kInt64Max);
  data.labels_crc32 = static_cast<uint32_t>(r.int_attr(f, "data_labels_crc32", 0, std::numeric_limits<uint32_t>::max()));
}

// The root attributes: the run's configuration, world size, loop state, scaler state and data.
void read_attributes(const Reader& r, hid_t f, Checkpoint& c) {
  c.config_json = r.has_attribute(f, "config_json") ? r.string_attr(f, "config_json") : "";
  c.world_size = static_cast<int>(r.int_attr(f, "world_size", 1, kIntMax));
  read_loop_state(r, f, c.loop);
  c.engine.optimizer_steps = r.int_attr(f, "optimizer_steps", 0, kInt64Max);
  c.engine.loss_scale = static_cast<float>(r.double_attr(f, "loss_scale", 0, std::numeric_limits<float>::max()));
  c.engine.scale_growth = static_cast<int32_t>(r.int_attr(f, "scale_growth", 0, std::numeric_limits<int32_t>::max()));
  read_data_identity(r, f, c.data);
}

// Each rank's training totals and buffers (batch-norm statistics), world_size rows each.
void read_rank_state(const Reader& r, hid_t f, Checkpoint& c) {
  std::vector<hsize_t> shape;
  std::vector<double> totals = r.array<double>(f, "train_totals", H5T_NATIVE_DOUBLE, 2, shape);
  if (shape[0] != static_cast<hsize_t>(c.world_size) || shape[1] != 3) r.bad("has malformed train_totals");
  // world_size is now bounded by the file's size (3 doubles a rank).
  for (size_t k = 0; k < static_cast<size_t>(c.world_size); ++k) {
    const double loss_sum = totals[3 * k], correct = totals[3 * k + 1], count = totals[3 * k + 2];
    if (!std::isfinite(loss_sum) || !is_count(correct) || !is_count(count)) r.bad("has malformed train_totals");
    c.rank_totals.push_back(EvalTotals{loss_sum, static_cast<int64_t>(correct), static_cast<int64_t>(count)});
  }
  std::vector<float> buffers = r.array<float>(f, "buffers", H5T_NATIVE_FLOAT, 2, shape);
  if (shape[0] != static_cast<hsize_t>(c.world_size)) r.bad("has buffers for another world size");
  for (hsize_t k = 0; k < shape[0]; ++k)
    c.rank_buffers.emplace_back(buffers.begin() + static_cast<ptrdiff_t>(k * shape[1]), buffers.begin() + static_cast<ptrdiff_t>((k + 1) * shape[1]));
}

// The optimizer's state buffers, in the order the group's `order` attribute names them.
void read_optimizer_state(const Reader& r, hid_t f, EngineState& engine) {
  std::vector<hsize_t> shape;
  ReadHandle group(r.must(H5Gopen2(f, "optimizer", H5P_DEFAULT), "optimizer group"), H5Gclose);
  if (!r.has_attribute(group.get(), "order")) r.bad("lacks the optimizer state order");
  for (const std::string& name : r.strings_attr(group.get(), "order", kMaxOptimizerStates)) {
    if (name.empty() || name.find('/') != std::string::npos || name == ".") r.bad("names an optimizer state '" + name + "'");
    engine.optimizer_state.emplace_back(name, r.array<float>(group.get(), name, H5T_NATIVE_FLOAT, 1, shape));
  }
}

}  // namespace

void seal_checkpoint(const std::string& path) {
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (!file || ec || size < kSealBytes) fatal("could not seal checkpoint " + path + ": it is not a checkpoint file being written");
  unsigned char header[kSealBytes] = {};
  std::memcpy(header, kSealMagic, sizeof kSealMagic);
  uint64_t digest = 0;
  if (!content_digest(file, size - kSealBytes, digest)) fatal("could not read back checkpoint " + path + " to seal it");
  put_le64(header + 8, size - kSealBytes);
  put_le64(header + 16, digest);
  file.clear();
  file.seekp(0);
  file.write(reinterpret_cast<const char*>(header), sizeof header);
  file.flush();
  if (!file) fatal("could not write the seal of checkpoint " + path);
}

void gather_rank_state(Communicator& comm, const EngineState& state, Checkpoint& into) {
  std::vector<float> all_buffers = comm.gather(std::span<const float>(state.buffers), 0);
  const double mine[3] = {state.train_totals.loss_sum, static_cast<double>(state.train_totals.correct),
                          static_cast<double>(state.train_totals.count)};
  std::vector<double> all_totals = comm.gather(std::span<const double>(mine, 3), 0);
  if (comm.rank() != 0) return;
  const size_t nb = state.buffers.size();
  into.rank_buffers.clear();
  into.rank_totals.clear();
  for (int r = 0; r < comm.size(); ++r) {
    into.rank_buffers.emplace_back(all_buffers.begin() + static_cast<ptrdiff_t>(r * nb), all_buffers.begin() + static_cast<ptrdiff_t>((r + 1) * nb));
    into.rank_totals.push_back(EvalTotals{all_totals[static_cast<size_t>(3 * r)], static_cast<int64_t>(all_totals[static_cast<size_t>(3 * r + 1)]),
                                          static_cast<int64_t>(all_totals[static_cast<size_t>(3 * r + 2)])});
  }
}

Checkpoint gather_checkpoint(Communicator& comm, Engine& engine, const std::string& config_json, const DataIdentity& data,
                             const LoopState& loop) {
  EngineState state = engine.run_state().save();
  Checkpoint c;
  gather_rank_state(comm, state, c);
  if (comm.rank() != 0) return c;
  c.config_json = config_json;
  c.data = data;
  c.world_size = comm.size();
  c.loop = loop;
  c.engine = std::move(state);
  return c;
}

void write_checkpoint(const Checkpoint& c, const std::string& path) {
  const std::string temporary = unique_working_path(path, "writing");
  write_file(temporary, c);
  seal_checkpoint(temporary);
  std::error_code ec;
  std::filesystem::rename(temporary, path, ec);
  if (ec) fatal("could not rename " + temporary + " to " + path + ": " + ec.message());
}

void save_checkpoint(Communicator& comm, Engine& engine, const std::string& config_json, const DataIdentity& data,
                     const LoopState& loop, const std::string& path) {
  const Checkpoint c = gather_checkpoint(comm, engine, config_json, data, loop);
  if (comm.rank() == 0) write_checkpoint(c, path);
  comm.barrier();  // the checkpoint exists before any rank moves on (or exits)
}

Checkpoint read_checkpoint(const std::string& path) {
  h5::init_hdf5();
  Reader r{path};
  check_is_a_file(path);
  std::error_code ec;
  r.file_bytes = std::filesystem::file_size(path, ec);
  if (ec) r.bad("can't be read (" + ec.message() + ")");
  check_seal(r);
  const ReadHandle file = open_checkpoint_file(r);
  const hid_t f = file.get();
  check_schema(r, f);
  Checkpoint c;
  read_attributes(r, f, c);
  std::vector<hsize_t> shape;
  c.engine.params = r.array<float>(f, "params", H5T_NATIVE_FLOAT, 1, shape);
  read_rank_state(r, f, c);
  read_optimizer_state(r, f, c.engine);
  return c;
}

void check_resumable_on_ranks(const Checkpoint& c, int ranks) {
  if (c.world_size != ranks && c.loop.step_in_epoch != 0) {
    throw UserError("the checkpoint was written by " + std::to_string(c.world_size) + " ranks in the middle of epoch " +
                    std::to_string(c.loop.epoch + 1) + "; resume it with " + std::to_string(c.world_size) +
                    " ranks (a different rank count can resume only from an epoch-boundary checkpoint, --checkpoint-every)");
  }
}

void restore_checkpoint(const Checkpoint& c, Communicator& comm, Engine& engine) {
  check_resumable_on_ranks(c, comm.size());
  const bool same_world = c.world_size == comm.size();
  EngineState state = c.engine;
  const size_t me = same_world ? static_cast<size_t>(comm.rank()) : 0;
  state.buffers = c.rank_buffers.at(me);
  state.train_totals = same_world ? c.rank_totals.at(me) : EvalTotals{};
  engine.run_state().load(state);
}

}  // namespace sb

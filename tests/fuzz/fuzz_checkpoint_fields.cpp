// Fuzzes what read_checkpoint checks behind the seal, on well-formed HDF5 files. The input chooses,
// field by field, a checkpoint: each attribute valid, missing, of another type or shape, or out of
// range; each dataset valid, missing, of another type, rank or storage layout, with dimensions that
// claim more than the file holds, or with other values; the optimizer group and its `order` list the
// same. The harness writes that file with the HDF5 API, seals it (seal_checkpoint) and reads it.
//
// fuzz_checkpoint_reader mutates the bytes of a file, which the seal stops before libhdf5, whose own
// bugs stop any mutation that gets past it (docs/fuzzing.md). Here libhdf5 parses only files it wrote
// itself, so every finding is in our reader. An empty input is a valid checkpoint: every choice's first
// option (0, what FuzzedDataProvider gives once the input is used up) is the valid one.
//
// Allowed outcomes: a checkpoint (checked for consistency), or sb::UserError.
#include <fuzzer/FuzzedDataProvider.h>
#include <hdf5.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/error.h"
#include "fuzz_util.h"
#include "h5/handle.h"
#include "train/checkpoint/checkpoint.h"

using namespace sb;

namespace {

// Closes an HDF5 id of the generator (failures to create are allowed: the choice is then skipped).
struct Id {
  hid_t id;
  herr_t (*close)(hid_t);
  ~Id() {
    if (id >= 0) close(id);
  }
};

double special_double(FuzzedDataProvider& p) {
  switch (p.ConsumeIntegralInRange(0, 7)) {
    case 0: return p.ConsumeFloatingPoint<double>();
    case 1: return std::numeric_limits<double>::quiet_NaN();
    case 2: return std::numeric_limits<double>::infinity();
    case 3: return -1.0;
    case 4: return 1e300;
    case 5: return 0.5;
    case 6: return 9007199254740993.0;  // 2^53 + 1
    default: return static_cast<double>(p.ConsumeIntegral<int64_t>());
  }
}

void write_attribute(hid_t object, const char* name, hid_t type, hid_t space, const void* data) {
  Id a{H5Acreate2(object, name, type, space, H5P_DEFAULT, H5P_DEFAULT), H5Aclose};
  if (a.id >= 0) H5Awrite(a.id, type, data);
}

void scalar_attribute(hid_t object, const char* name, hid_t type, const void* data) {
  Id space{H5Screate(H5S_SCALAR), H5Sclose};
  write_attribute(object, name, type, space.id, data);
}

void string_list_attribute(hid_t object, const char* name, const std::vector<std::string>& values, bool scalar,
                           size_t fixed_width) {
  Id type{H5Tcopy(H5T_C_S1), H5Tclose};
  const hsize_t count = values.size();
  Id space{scalar ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &count, nullptr), H5Sclose};
  if (fixed_width == 0) {
    H5Tset_size(type.id, H5T_VARIABLE);
    H5Tset_cset(type.id, H5T_CSET_UTF8);
    std::vector<const char*> texts;
    for (const std::string& v : values) texts.push_back(v.c_str());
    texts.push_back(nullptr);
    write_attribute(object, name, type.id, space.id, texts.data());
  } else {
    H5Tset_size(type.id, fixed_width);
    std::vector<char> buffer(fixed_width * (values.size() + 1), '\0');
    for (size_t i = 0; i < values.size(); ++i) values[i].copy(buffer.data() + i * fixed_width, fixed_width);
    write_attribute(object, name, type.id, space.id, buffer.data());
  }
}

// An attribute that is valid (the given value) or something else the input chooses.
void attribute(FuzzedDataProvider& p, hid_t object, const char* name, int64_t valid_int, double valid_double,
               const char* valid_string) {
  const int kind = p.ConsumeIntegralInRange(0, 9);
  switch (kind) {
    case 0:  // valid
      if (valid_string) {
        string_list_attribute(object, name, {valid_string}, true, 0);
      } else if (std::isnan(valid_double)) {
        scalar_attribute(object, name, H5T_NATIVE_INT64, &valid_int);
      } else {
        scalar_attribute(object, name, H5T_NATIVE_DOUBLE, &valid_double);
      }
      return;
    case 1: return;  // missing
    case 2: {
      const int64_t v = p.ConsumeIntegral<int64_t>();
      scalar_attribute(object, name, H5T_NATIVE_INT64, &v);
      return;
    }
    case 3: {
      const double v = special_double(p);
      scalar_attribute(object, name, H5T_NATIVE_DOUBLE, &v);
      return;
    }
    case 4: {
      const int8_t v = p.ConsumeIntegral<int8_t>();
      scalar_attribute(object, name, H5T_NATIVE_SCHAR, &v);
      return;
    }
    case 5: {
      const uint64_t v = p.ConsumeIntegral<uint64_t>();
      scalar_attribute(object, name, H5T_NATIVE_UINT64, &v);
      return;
    }
    case 6: {  // an array of numbers
      std::vector<int64_t> v(p.ConsumeIntegralInRange<size_t>(0, 3), valid_int);
      const hsize_t n = v.size();
      Id space{H5Screate_simple(1, &n, nullptr), H5Sclose};
      v.push_back(0);
      write_attribute(object, name, H5T_NATIVE_INT64, space.id, v.data());
      return;
    }
    case 7:  // a variable-length string, or a list of them
    case 8: {  // fixed-length strings
      std::vector<std::string> values;
      const size_t count = p.ConsumeIntegralInRange<size_t>(0, 3);
      for (size_t i = 0; i < count; ++i)
        values.push_back(p.ConsumeBool() && valid_string ? std::string(valid_string) : p.ConsumeRandomLengthString(32));
      const bool scalar = count == 1 && p.ConsumeBool();
      string_list_attribute(object, name, values, scalar, kind == 8 ? p.ConsumeIntegralInRange<size_t>(1, 40) : 0);
      return;
    }
    default: {  // a float
      const float v = static_cast<float>(valid_double == valid_double ? valid_double : static_cast<double>(valid_int));
      scalar_attribute(object, name, H5T_NATIVE_FLOAT, &v);
      return;
    }
  }
}

// A dataset that is valid (stored as `file_type`, of `dims`, holding `values`) or something else.
void dataset(FuzzedDataProvider& p, hid_t parent, const std::string& name, hid_t file_type, std::vector<hsize_t> dims,
             std::vector<double> values) {
  const int kind = p.ConsumeIntegralInRange(0, 9);
  if (kind == 1) return;  // missing
  hid_t type = file_type;
  Id string_type{H5Tcopy(H5T_C_S1), H5Tclose};
  H5Tset_size(string_type.id, 4);
  Id create{H5Pcreate(H5P_DATASET_CREATE), H5Pclose};
  bool write = true;
  switch (kind) {
    case 2:  // another element type
      type = p.PickValueInArray<hid_t>({H5T_STD_I32LE, H5T_IEEE_F64LE, H5T_IEEE_F32LE, H5T_STD_U8LE, string_type.id,
                                        H5T_IEEE_F32BE, H5T_STD_I64BE});
      break;
    case 3:  // another rank
      if (p.ConsumeBool() && !dims.empty())
        dims.pop_back();
      else
        dims.push_back(p.ConsumeIntegralInRange<hsize_t>(0, 3));
      break;
    case 4:  // dimensions that claim more than the file holds, never written (contiguous, allocated late)
      for (hsize_t& d : dims) d = p.ConsumeBool() ? p.ConsumeIntegral<uint32_t>() : p.ConsumeIntegral<uint64_t>() >> 4;
      write = false;
      break;
    case 5: {  // chunked, maybe compressed, maybe with huge dimensions and nothing written
      std::vector<hsize_t> chunk(dims.size(), 1);
      if (!dims.empty()) H5Pset_chunk(create.id, static_cast<int>(chunk.size()), chunk.data());
      if (p.ConsumeBool()) H5Pset_deflate(create.id, 1);
      if (p.ConsumeBool()) {
        for (hsize_t& d : dims) d = p.ConsumeIntegral<uint32_t>();
        write = false;
      }
      break;
    }
    case 6:  // compact storage
      H5Pset_layout(create.id, H5D_COMPACT);
      break;
    case 7:  // other values
      for (double& v : values) v = special_double(p);
      break;
    case 8:  // a scalar dataspace
      dims.clear();
      break;
    default: break;  // valid
  }
  hsize_t n = 1;
  for (hsize_t d : dims) n = d ? (n <= (hsize_t{1} << 20) / d ? n * d : (hsize_t{1} << 20) + 1) : 0;
  if (n > (hsize_t{1} << 20)) write = false;  // never fills what it claims
  Id space{dims.empty() ? H5Screate(H5S_SCALAR) : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr),
           H5Sclose};
  Id set{H5Dcreate2(parent, name.c_str(), type, space.id, H5P_DEFAULT, create.id, H5P_DEFAULT), H5Dclose};
  if (set.id < 0 || !write || type == string_type.id) return;
  std::vector<double> data(static_cast<size_t>(n) + 1, 0.0);
  for (size_t i = 0; i < data.size() && i < values.size(); ++i) data[i] = values[i];
  H5Dwrite(set.id, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data());
}

// The `order` list: valid (variable-length strings), or stored another way.
void attribute_order(FuzzedDataProvider& p, hid_t group, const std::vector<std::string>& names) {
  switch (p.ConsumeIntegralInRange(0, 3)) {
    case 0: string_list_attribute(group, "order", names, false, 0); break;
    case 1: string_list_attribute(group, "order", names, false, p.ConsumeIntegralInRange<size_t>(1, 24)); break;
    case 2: {  // a long list
      std::vector<std::string> many(p.ConsumeIntegralInRange<size_t>(60, 70), names.empty() ? "x" : names.front());
      string_list_attribute(group, "order", many, false, 0);
      break;
    }
    default: attribute(p, group, "order", 0, 0, "momentum_buffer"); break;
  }
}

void write_checkpoint(FuzzedDataProvider& p, const std::string& path) {
  Id create{H5Pcreate(H5P_FILE_CREATE), H5Pclose};
  H5Pset_userblock(create.id, 512);
  Id file{H5Fcreate(path.c_str(), H5F_ACC_TRUNC, create.id, H5P_DEFAULT), H5Fclose};
  if (file.id < 0) fuzz::die("H5Fcreate failed");
  const hid_t f = file.id;
  const double kInt = std::numeric_limits<double>::quiet_NaN();  // "the valid value is an int64"
  const int64_t world = p.ConsumeIntegralInRange<int64_t>(1, 4);
  attribute(p, f, "schema", 0, 0, "scalebench-checkpoint");
  attribute(p, f, "schema_version", 2, kInt, nullptr);
  attribute(p, f, "config_json", 0, 0, "{\"model\":\"fuzz\"}");
  attribute(p, f, "world_size", world, kInt, nullptr);
  attribute(p, f, "epoch", 1, kInt, nullptr);
  attribute(p, f, "step_in_epoch", 0, kInt, nullptr);
  attribute(p, f, "global_step", 3, kInt, nullptr);
  attribute(p, f, "elapsed_s", 0, 1.5, nullptr);
  attribute(p, f, "best_accuracy", 0, 0.25, nullptr);
  attribute(p, f, "epochs_without_improvement", 0, kInt, nullptr);
  attribute(p, f, "evaluations_at_target", 0, kInt, nullptr);
  attribute(p, f, "target_reached_s", 0, 2.5, nullptr);
  attribute(p, f, "optimizer_steps", 3, kInt, nullptr);
  attribute(p, f, "loss_scale", 0, 0.0, nullptr);
  attribute(p, f, "scale_growth", 0, kInt, nullptr);
  attribute(p, f, "data_spec", 0, 0, "synthetic:1x4x4:2:16:8");
  attribute(p, f, "data_train_samples", 16, kInt, nullptr);
  attribute(p, f, "data_test_samples", 8, kInt, nullptr);
  attribute(p, f, "data_labels_crc32", 12345, kInt, nullptr);

  const hsize_t params = p.ConsumeIntegralInRange<hsize_t>(3, 6), buffers = p.ConsumeIntegralInRange<hsize_t>(0, 2);
  const auto w = static_cast<hsize_t>(world);
  dataset(p, f, "params", H5T_IEEE_F32LE, {params}, std::vector<double>(params, 0.5));
  dataset(p, f, "buffers", H5T_IEEE_F32LE, {w, buffers}, std::vector<double>(w * buffers, 1.0));
  std::vector<double> totals;
  for (hsize_t r = 0; r < w; ++r) totals.insert(totals.end(), {2.5, 3.0, 4.0});
  dataset(p, f, "train_totals", H5T_IEEE_F64LE, {w, 3}, totals);

  const int group_kind = p.ConsumeIntegralInRange(0, 3);
  if (group_kind == 1) return;  // no optimizer group
  Id group{H5Gcreate2(f, "optimizer", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose};
  if (group.id < 0) return;
  std::vector<std::string> names = {"momentum_buffer"};
  if (group_kind == 3) {  // other names, maybe odd ones, maybe repeated
    names.clear();
    const size_t count = p.ConsumeIntegralInRange<size_t>(0, 5);
    for (size_t i = 0; i < count; ++i)
      names.push_back(p.ConsumeBool() ? p.PickValueInArray<std::string>({"exp_avg", "exp_avg_sq", "", ".", "/params",
                                                                       "a/b", "..", "momentum_buffer"})
                                      : p.ConsumeRandomLengthString(16));
  }
  if (group_kind != 2) attribute_order(p, group.id, names);
  for (const std::string& name : names) dataset(p, group.id, name, H5T_IEEE_F32LE, {params}, std::vector<double>(params, 0.1));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::abort_on_fatal();
  h5::init_hdf5();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fuzz::ScratchDir dir;
  static const std::string path = dir.path() + "/fields.ckpt.h5";
  FuzzedDataProvider p(data, size);
  write_checkpoint(p, path);
  seal_checkpoint(path);
  try {
    const Checkpoint c = read_checkpoint(path);
    SB_FUZZ_REQUIRE(c.world_size >= 1);
    SB_FUZZ_REQUIRE(c.rank_buffers.size() == static_cast<size_t>(c.world_size));
    SB_FUZZ_REQUIRE(c.rank_totals.size() == static_cast<size_t>(c.world_size));
    for (const EvalTotals& t : c.rank_totals) SB_FUZZ_REQUIRE(t.correct >= 0 && t.count >= 0 && std::isfinite(t.loss_sum));
    SB_FUZZ_REQUIRE(c.loop.epoch >= 0 && c.loop.step_in_epoch >= 0 && c.loop.global_step >= 0);
    SB_FUZZ_REQUIRE(c.loop.stop.best_accuracy >= 0 && c.loop.stop.best_accuracy <= 1 && std::isfinite(c.engine.loss_scale));
    SB_FUZZ_REQUIRE(c.loop.stop.evaluations_at_target >= 0 && !(c.loop.target_reached_s < 0));
    for (const auto& [name, values] : c.engine.optimizer_state) SB_FUZZ_REQUIRE(!name.empty());
    SB_FUZZ_REQUIRE(c.data.train_samples >= 0 && c.data.test_samples >= 0);
  } catch (const UserError& e) {
    fuzz::expected(e);  // the answer to a bad file
  }
  return 0;
}

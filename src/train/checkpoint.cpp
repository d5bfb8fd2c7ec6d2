#include "train/checkpoint.h"

#include <hdf5.h>

#include <cstdio>
#include <filesystem>

#include "core/check.h"
#include "core/error.h"
#include "metrics/hdf5_attributes.h"
#include "metrics/hdf5_handle.h"

namespace sb {
namespace {

constexpr const char* kSchema = "scalebench-checkpoint";
constexpr int64_t kSchemaVersion = 1;

void write_array(hid_t parent, const char* name, hid_t file_type, hid_t memory_type, const std::vector<hsize_t>& dims,
                 const void* data) {
  h5::Handle space = h5::Handle::dataspace(CHECK_HDF5(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr)));
  h5::Handle set = h5::Handle::dataset(CHECK_HDF5(H5Dcreate2(parent, name, file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)));
  CHECK_HDF5(H5Dwrite(set.get(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data));
}

void write_file(const std::string& path, const Checkpoint& c) {
  h5::init_hdf5();
  h5::Handle access = h5::unlocked_file_access();
  h5::Handle file = h5::Handle::file(CHECK_HDF5(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, access.get())));
  const hid_t f = file.get();
  h5::write_string_attribute(f, "schema", kSchema);
  h5::write_int_attribute(f, "schema_version", kSchemaVersion);
  h5::write_string_attribute(f, "config_json", c.config_json);
  h5::write_int_attribute(f, "world_size", c.world_size);
  h5::write_int_attribute(f, "epoch", c.loop.epoch);
  h5::write_int_attribute(f, "step_in_epoch", c.loop.step_in_epoch);
  h5::write_int_attribute(f, "global_step", c.loop.global_step);
  h5::write_double_attribute(f, "elapsed_s", c.loop.elapsed_s);
  h5::write_double_attribute(f, "best_accuracy", c.loop.best_accuracy);
  h5::write_int_attribute(f, "epochs_without_improvement", c.loop.epochs_without_improvement);
  h5::write_int_attribute(f, "optimizer_steps", c.engine.optimizer_steps);
  h5::write_double_attribute(f, "loss_scale", c.engine.loss_scale);
  h5::write_int_attribute(f, "scale_growth", c.engine.scale_growth);

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

// Reading: every failure is the user's file, so it becomes a UserError instead of aborting the job.
struct Reader {
  std::string path;
  [[noreturn]] void bad(const std::string& what) const {
    throw UserError("checkpoint " + path + " " + what + "; pass a file written by scalebench --checkpoint-every or a signal");
  }
  hid_t must(hid_t id, const std::string& what) const {
    if (id < 0) bad("has no readable " + what);
    return id;
  }
  std::vector<hsize_t> dims(hid_t set, const std::string& name) const {
    h5::Handle space = h5::Handle::dataspace(must(H5Dget_space(set), name));
    const int rank = H5Sget_simple_extent_ndims(space.get());
    if (rank < 1 || rank > 2) bad("has a malformed " + name);
    std::vector<hsize_t> d(static_cast<size_t>(rank));
    H5Sget_simple_extent_dims(space.get(), d.data(), nullptr);
    return d;
  }
  template <typename T>
  std::vector<T> array(hid_t parent, const std::string& name, hid_t memory_type, std::vector<hsize_t>& shape) const {
    h5::Handle set = h5::Handle::dataset(must(H5Dopen2(parent, name.c_str(), H5P_DEFAULT), "dataset '" + name + "'"));
    shape = dims(set.get(), name);
    hsize_t n = 1;
    for (hsize_t d : shape) n *= d;
    // A checkpoint holds the model once: refuse sizes no model of ours has before allocating.
    if (n > (hsize_t{1} << 32)) bad("claims " + std::to_string(n) + " elements in '" + name + "'");
    std::vector<T> out(static_cast<size_t>(n));
    if (n && H5Dread(set.get(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()) < 0) bad("has an unreadable '" + name + "'");
    return out;
  }
  int64_t int_attr(hid_t f, const char* name) const {
    if (!h5::has_attribute(f, name)) bad(std::string("lacks the attribute '") + name + "'");
    return h5::read_int_attribute(f, name);
  }
  double double_attr(hid_t f, const char* name) const {
    if (!h5::has_attribute(f, name)) bad(std::string("lacks the attribute '") + name + "'");
    return h5::read_double_attribute(f, name);
  }
};

}  // namespace

void save_checkpoint(Communicator& comm, Engine& engine, const std::string& config_json, const LoopState& loop,
                     const std::string& path) {
  EngineState state = engine.save_state();
  std::vector<float> all_buffers = comm.gather(std::span<const float>(state.buffers), 0);
  const double mine[3] = {state.train_totals.loss_sum, static_cast<double>(state.train_totals.correct),
                          static_cast<double>(state.train_totals.count)};
  std::vector<double> all_totals = comm.gather(std::span<const double>(mine, 3), 0);
  if (comm.rank() == 0) {
    Checkpoint c;
    c.config_json = config_json;
    c.world_size = comm.size();
    c.loop = loop;
    const size_t nb = state.buffers.size();
    for (int r = 0; r < comm.size(); ++r) {
      c.rank_buffers.emplace_back(all_buffers.begin() + static_cast<ptrdiff_t>(r * nb), all_buffers.begin() + static_cast<ptrdiff_t>((r + 1) * nb));
      c.rank_totals.push_back(EvalTotals{all_totals[static_cast<size_t>(3 * r)], static_cast<int64_t>(all_totals[static_cast<size_t>(3 * r + 1)]),
                                         static_cast<int64_t>(all_totals[static_cast<size_t>(3 * r + 2)])});
    }
    c.engine = std::move(state);
    const std::string temporary = path + ".writing";
    write_file(temporary, c);
    std::error_code ec;
    std::filesystem::rename(temporary, path, ec);
    if (ec) fatal("could not rename " + temporary + " to " + path + ": " + ec.message());
  }
  comm.barrier();  // the checkpoint exists before any rank moves on (or exits)
}

Checkpoint read_checkpoint(const std::string& path) {
  h5::init_hdf5();
  Reader r{path};
  if (!std::filesystem::is_regular_file(path)) throw UserError("--resume " + path + ": no such file");
  if (H5Fis_hdf5(path.c_str()) <= 0) r.bad("is not an HDF5 file");
  h5::Handle access = h5::unlocked_file_access();
  h5::Handle file = h5::Handle::file(r.must(H5Fopen(path.c_str(), H5F_ACC_RDONLY, access.get()), "HDF5 structure"));
  const hid_t f = file.get();
  if (!h5::has_attribute(f, "schema") || h5::read_string_attribute(f, "schema") != kSchema) r.bad("is not a scalebench checkpoint");
  if (r.int_attr(f, "schema_version") != kSchemaVersion) r.bad("has an unknown schema_version");
  Checkpoint c;
  c.config_json = h5::has_attribute(f, "config_json") ? h5::read_string_attribute(f, "config_json") : "";
  c.world_size = static_cast<int>(r.int_attr(f, "world_size"));
  c.loop.epoch = static_cast<int>(r.int_attr(f, "epoch"));
  c.loop.step_in_epoch = r.int_attr(f, "step_in_epoch");
  c.loop.global_step = r.int_attr(f, "global_step");
  c.loop.elapsed_s = r.double_attr(f, "elapsed_s");
  c.loop.best_accuracy = r.double_attr(f, "best_accuracy");
  c.loop.epochs_without_improvement = static_cast<int>(r.int_attr(f, "epochs_without_improvement"));
  c.engine.optimizer_steps = r.int_attr(f, "optimizer_steps");
  c.engine.loss_scale = static_cast<float>(r.double_attr(f, "loss_scale"));
  c.engine.scale_growth = static_cast<int32_t>(r.int_attr(f, "scale_growth"));
  if (c.world_size < 1 || c.loop.epoch < 0 || c.loop.step_in_epoch < 0 || c.loop.global_step < 0) r.bad("has negative counters");

  std::vector<hsize_t> shape;
  c.engine.params = r.array<float>(f, "params", H5T_NATIVE_FLOAT, shape);
  std::vector<float> buffers = r.array<float>(f, "buffers", H5T_NATIVE_FLOAT, shape);
  if (shape.size() != 2 || shape[0] != static_cast<hsize_t>(c.world_size)) r.bad("has buffers for another world size");
  for (hsize_t k = 0; k < shape[0]; ++k)
    c.rank_buffers.emplace_back(buffers.begin() + static_cast<ptrdiff_t>(k * shape[1]), buffers.begin() + static_cast<ptrdiff_t>((k + 1) * shape[1]));
  std::vector<double> totals = r.array<double>(f, "train_totals", H5T_NATIVE_DOUBLE, shape);
  if (shape.size() != 2 || shape[0] != static_cast<hsize_t>(c.world_size) || shape[1] != 3) r.bad("has malformed train_totals");
  for (int k = 0; k < c.world_size; ++k)
    c.rank_totals.push_back(EvalTotals{totals[static_cast<size_t>(3 * k)], static_cast<int64_t>(totals[static_cast<size_t>(3 * k + 1)]),
                                       static_cast<int64_t>(totals[static_cast<size_t>(3 * k + 2)])});
  h5::Handle group = h5::Handle::group(r.must(H5Gopen2(f, "optimizer", H5P_DEFAULT), "optimizer group"));
  if (!h5::has_attribute(group.get(), "order")) r.bad("lacks the optimizer state order");
  for (const std::string& name : h5::read_string_list_attribute(group.get(), "order")) {
    c.engine.optimizer_state.emplace_back(name, r.array<float>(group.get(), name, H5T_NATIVE_FLOAT, shape));
  }
  return c;
}

void restore_checkpoint(const Checkpoint& c, Communicator& comm, Engine& engine) {
  const bool same_world = c.world_size == comm.size();
  if (!same_world && c.loop.step_in_epoch != 0) {
    throw UserError("the checkpoint was written by " + std::to_string(c.world_size) + " ranks in the middle of epoch " +
                    std::to_string(c.loop.epoch + 1) + "; resume it with " + std::to_string(c.world_size) +
                    " ranks (a different rank count can resume only from an epoch-boundary checkpoint, --checkpoint-every)");
  }
  EngineState state = c.engine;
  const size_t me = same_world ? static_cast<size_t>(comm.rank()) : 0;
  state.buffers = c.rank_buffers.at(me);
  state.train_totals = same_world ? c.rank_totals.at(me) : EvalTotals{};
  engine.load_state(state);
}

}  // namespace sb

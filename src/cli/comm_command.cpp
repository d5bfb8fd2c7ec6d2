// `scalebench comm`: the collective sweep (nccl-tests' all_reduce_perf and its siblings, on our
// communicators), plus one call of a model's gradient size. MPI on the CPU backend, NCCL on the GPU backend.
#include <algorithm>
#include <climits>
#include <cstdio>
#include <memory>
#include <sstream>

#include "cli/command_setup.h"
#include "cli/commands.h"
#include "cli/engine_factory.h"
#include "cli/options.h"
#include "cli/run_metadata.h"
#include "comm/allreduce_sweep.h"
#include "comm/collective.h"
#include "core/error.h"
#include "core/exit_codes.h"
#include "core/json_text.h"
#include "core/log.h"
#include "cli/table_exports.h"
#include "metrics/comm_results.h"
#include "models/registry.h"
#include "train/collective.h"
#ifdef SCALEBENCH_HAVE_CUDA
#include "comm/cuda/allreduce_sweep_cuda.h"
#endif

namespace sb {
namespace {


const char* kSummary =
    "An all-reduce sweep printed as nccl-tests' all_reduce_perf prints it: for each --dtypes and each power of two\n"
    "from --min-bytes to --max-bytes, plus the gradient size of --comm-model, an out-of-place and then an in-place\n"
    "sum are each checked element by element (#wrong), then --iterations of each are timed. time is the mean over\n"
    "ranks of each rank's mean per all-reduce (the slowest rank's is beside it); algbw = bytes / time;\n"
    "busbw = algbw * 2(n-1)/n. --device cpu uses MPI (fp32, fp64; MPI has no bf16/fp16 reduction),\n"
    "--device cuda uses NCCL on one GPU per rank. --collectives adds reduce-scatter, all-gather and broadcast\n"
    "(bytes and busbw as nccl-tests counts them; a `collective` column then ends each line).\n"
    "Exits with status 3 when any result is wrong.";

// The exported table (--csv, --json): all_reduce_perf's columns under its names, out of place then in
// place, then the slowest rank's times, the model marker and the collective. JSON keys are unique; CSV
// headers repeat as all_reduce_perf's do.
const std::vector<ExportColumn>& comm_export_columns() {
  static const std::vector<ExportColumn> columns = {
      {"size", "size"},           {"count", "count"},         {"type", "type"},           {"redop", "redop"},
      {"root", "root"},           {"oop_time", "time"},       {"oop_algbw", "algbw"},     {"oop_busbw", "busbw"},
      {"oop_wrong", "#wrong"},    {"ip_time", "time"},        {"ip_algbw", "algbw"},      {"ip_busbw", "busbw"},
      {"ip_wrong", "#wrong"},     {"oop_time_max", "oop_time_max"}, {"ip_time_max", "ip_time_max"},
      {"model", "model"},         {"collective", "collective"}};
  return columns;
}

std::vector<ExportValue> export_row(const SweepResult& r, const std::string& model) {
  const SweepTiming& o = r.out_of_place;
  const SweepTiming& i = r.in_place;
  const Collective& c = collective_of(r.point.collective);
  return {r.point.bytes(), r.point.count, std::string(nccl_tests_type_name(r.point.dtype)), std::string(c.redop),
          int64_t{c.root}, o.time_us_mean, o.algbw_gbps, o.busbw_gbps, o.wrong, i.time_us_mean, i.algbw_gbps, i.busbw_gbps,
          i.wrong, o.time_us_max_rank, i.time_us_max_rank, r.point.is_model_size ? model : std::string(),
          std::string(c.name)};
}

std::string describe_input(const ModelInput& in) {
  return std::to_string(in.channels) + "x" + std::to_string(in.height) + "x" + std::to_string(in.width) + " inputs, " +
         std::to_string(in.classes) + " classes";
}


std::string quote_list(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ',';
    out += json_quote(items[i]);
  }
  return out + "]";
}

std::string join(const std::vector<std::string>& items, const char* separator) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += separator;
    out += items[i];
  }
  return out;
}

std::vector<std::string> names_of(const std::vector<SweepDtype>& dtypes) {
  std::vector<std::string> names;
  for (SweepDtype d : dtypes) names.emplace_back(sweep_dtype_name(d));
  return names;
}

std::vector<std::string> names_of(const std::vector<CollectiveKind>& collectives) {
  std::vector<std::string> names;
  for (CollectiveKind c : collectives) names.emplace_back(collective_of(c).name);
  return names;
}

CommRow to_comm_row(const SweepResult& r) {
  CommRow row;
  row.bytes = r.point.bytes();
  row.count = r.point.count;
  row.dtype = static_cast<int64_t>(r.point.dtype);
  row.oop_time_us_mean = r.out_of_place.time_us_mean;
  row.oop_time_us_min_rank = r.out_of_place.time_us_min_rank;
  row.oop_time_us_max_rank = r.out_of_place.time_us_max_rank;
  row.oop_algbw_gbps = r.out_of_place.algbw_gbps;
  row.oop_busbw_gbps = r.out_of_place.busbw_gbps;
  row.oop_wrong = r.out_of_place.wrong;
  row.time_us_mean = r.in_place.time_us_mean;
  row.time_us_min_rank = r.in_place.time_us_min_rank;
  row.time_us_max_rank = r.in_place.time_us_max_rank;
  row.algbw_gbps = r.in_place.algbw_gbps;
  row.busbw_gbps = r.in_place.busbw_gbps;
  row.wrong = r.in_place.wrong;
  row.is_model_size = r.point.is_model_size ? 1 : 0;
  row.collective = static_cast<int64_t>(r.point.collective);
  return row;
}

// What the sweep runs: the collectives, the element types that this backend reduces, the sizes, and the
// model's gradient size among them.
struct SweepPlan {
  std::vector<CollectiveKind> collectives;
  std::vector<SweepDtype> dtypes;
  std::vector<std::string> skipped;  // asked for, but MPI has no reduction of them
  std::string skip_note;             // why some were skipped (or, later, symmetric memory refused)
  ModelInput input;
  int64_t model_elements = 0;
  std::vector<SweepPoint> points;
  // Whether lines name their collective: not for the default sweep, whose output stays all_reduce_perf's.
  bool only_all_reduce() const { return collectives == std::vector<CollectiveKind>{CollectiveKind::AllReduce}; }
};

void choose_dtypes(SweepPlan& plan, const CommSettings& comm, bool on_gpu) {
  for (SweepDtype d : parse_sweep_dtypes(comm.dtypes)) {
    if (on_gpu || mpi_can_reduce(d)) plan.dtypes.push_back(d);
    else plan.skipped.emplace_back(sweep_dtype_name(d));
  }
  if (plan.dtypes.empty()) {
    throw UserError("--dtypes " + join(comm.dtypes, ",") +
                    ": the CPU backend (MPI) reduces only fp32 and fp64; bf16 and fp16 need --device cuda");
  }
  if (!plan.skipped.empty())
    plan.skip_note = join(plan.skipped, ", ") + " skipped: MPI has no bf16/fp16 reduction; they need --device cuda";
}

int64_t model_gradient_elements(const std::string& model, ModelInput& input) {
  try {
    input = model_info(model).home_input;  // the gradient count depends on the input
  } catch (const UserError& e) {
    throw UserError(std::string("--comm-model: ") + e.what());
  }
  return count_elements(collect_params(build_model(model, input)));
}

void check_mpi_counts(const std::vector<SweepPoint>& points, const CommSettings& comm) {
  for (const SweepPoint& p : points) {
    if (p.count > INT_MAX) {
      throw UserError("--max-bytes " + std::to_string(comm.max_bytes) + " asks for a " + collective_of(p.collective).name + " of " + std::to_string(p.count) +
                      " elements; MPI counts are int, so the CPU backend reduces at most " + std::to_string(INT_MAX) +
                      " elements per call (8 GiB of fp32)");
    }
  }
}

// The cheap checks, in the order a user would fix them: values, then the model. Collective.
SweepPlan plan_sweep(Communicator& world, const TrainConfig& config, const CommSettings& comm, bool on_gpu) {
  SweepPlan plan;
  run_collectively(world, [&] {
    if (comm.iterations < 1) throw UserError("--iterations must be at least 1 (got " + std::to_string(comm.iterations) + ")");
    const std::vector<int64_t> sizes = power_of_two_sizes(comm.min_bytes, comm.max_bytes);
    plan.collectives = parse_collectives(comm.collectives);
    choose_dtypes(plan, comm, on_gpu);
    plan.model_elements = model_gradient_elements(config.model, plan.input);
    for (CollectiveKind c : plan.collectives) {
      const std::vector<SweepPoint> points = sweep_points(collective_of(c), world.size(), sizes, plan.dtypes, plan.model_elements);
      plan.points.insert(plan.points.end(), points.begin(), points.end());
    }
    if (plan.points.empty()) {
      throw UserError("--max-bytes " + std::to_string(comm.max_bytes) + " is too small for --collectives " +
                      join(comm.collectives, ",") + " on " + std::to_string(world.size()) +
                      " ranks: each rank needs at least one element; raise --max-bytes");
    }
    if (!on_gpu) check_mpi_counts(plan.points, comm);
  });
  return plan;
}

// The configuration JSON of the results file, which every rank agrees on.
std::string sweep_config_json(const TrainConfig& config, const CommSettings& comm, const SweepPlan& plan,
                              const SweepSettings& settings, bool symmetric_memory) {
  std::ostringstream json;
  json << "{\"command\":\"comm\",\"device\":" << json_quote(name_of(config.device)) << ",\"out\":" << json_quote(config.out)
       << ",\"min_bytes\":" << comm.min_bytes << ",\"max_bytes\":" << comm.max_bytes
       << ",\"dtypes\":" << quote_list(comm.dtypes) << ",\"dtypes_run\":" << quote_list(names_of(plan.dtypes))
       << ",\"collectives\":" << quote_list(names_of(plan.collectives))
       << ",\"iterations\":" << settings.iterations << ",\"warmup_iterations\":" << settings.warmup_iterations
       << ",\"comm_model\":" << json_quote(config.model) << ",\"model_elements\":" << plan.model_elements
       << ",\"op\":\"sum\",\"out_of_place\":true,\"in_place\":true"
       << ",\"symmetric_memory\":" << (symmetric_memory ? "true" : "false") << "}";
  return json.str();
}

// The collectives of the sweep: NCCL's on the GPU backend, MPI's on the CPU backend.
class SweepRunner {
 public:
  // On the GPU, the GPU, NCCL and the memory check come before the results file: a refused run leaves
  // none. A refusal of symmetric memory joins the plan's note.
  SweepRunner(MpiSession& session, bool on_gpu, bool symmetric_memory, SweepPlan& plan) : world_(session.world()) {
#ifdef SCALEBENCH_HAVE_CUDA
    if (!on_gpu) return;
    gpu_ = std::make_unique<cuda::CudaAllreduceSweep>(world_, session.local_rank(), symmetric_memory);
    if (!gpu_->symmetric_refusal().empty()) {
      const std::string refused = "symmetric memory off: " + gpu_->symmetric_refusal();
      plan.skip_note = plan.skip_note.empty() ? refused : plan.skip_note + "; " + refused;
    }
    int64_t largest = 0;
    for (const SweepPoint& p : plan.points) largest = std::max(largest, p.bytes());
    run_collectively(world_, [&] { gpu_->check_fits(largest); });
#else
    (void)on_gpu, (void)symmetric_memory, (void)plan;
#endif
  }

  SweepResult run(const SweepPoint& p, const SweepSettings& settings) {
#ifdef SCALEBENCH_HAVE_CUDA
    if (gpu_) return gpu_->run(p, settings);
#endif
    return run_cpu_collective(world_, collective_of(p.collective), p, settings);
  }

  bool uses_symmetric_windows() const {
#ifdef SCALEBENCH_HAVE_CUDA
    return gpu_ && gpu_->uses_symmetric_windows();
#else
    return false;
#endif
  }

 private:
  MpiCommunicator& world_;
#ifdef SCALEBENCH_HAVE_CUDA
  std::unique_ptr<cuda::CudaAllreduceSweep> gpu_;
#endif
};

// The results file on rank 0 (--out); none elsewhere or without --out.
std::unique_ptr<CommResultsFile> open_comm_results(MpiSession& session, const TrainConfig& config, const RuntimeInfo& info,
                                                   const std::string& config_json, const SweepPlan& plan,
                                                   const SweepSettings& settings, bool on_gpu) {
  MpiCommunicator& world = session.world();
  if (config.out.empty() || world.rank() != 0) return nullptr;
  RunMetadata metadata = make_run_metadata(session, info, config, world.size());
  metadata.config_json = config_json;
  CommTableInfo table;
  table.backend = on_gpu ? "nccl" : "mpi";
  table.ranks = world.size();
  table.iterations = settings.iterations;
  table.warmup_iterations = settings.warmup_iterations;
  table.dtype_names = sweep_dtype_names();
  table.collective_names = collective_names();
  table.skipped_dtypes = plan.skipped;
  table.note = plan.skip_note;
  table.model = config.model;
  table.model_elements = plan.model_elements;
  return std::make_unique<CommResultsFile>(config.out, metadata, table);
}

// What the opening lines say of the collectives: the default sweep's words, or each collective with its
// busbw factor on n ranks.
void log_collectives(const SweepPlan& plan, int n, int nodes, const char* backend, const std::string& device,
                     const SweepSettings& settings) {
  if (plan.only_all_reduce()) {
    log0("# scalebench comm: all-reduce (sum) on %d rank(s), %d node(s); %s on %s\n", n, nodes, backend, device.c_str());
    log0("# %d warm-up + %d timed iterations per size and form; time = the mean over ranks of each rank's mean per "
         "all-reduce; busbw = algbw * 2(n-1)/n = algbw * %.3f\n",
         settings.warmup_iterations, settings.iterations, allreduce_busbw_factor(n));
    return;
  }
  std::string names, factors;
  for (CollectiveKind k : plan.collectives) {
    const Collective& c = collective_of(k);
    names += (names.empty() ? "" : ", ") + std::string(c.name);
    char factor[64];
    std::snprintf(factor, sizeof factor, "%s%s %.3f", factors.empty() ? "" : ", ", c.name, c.busbw_factor(n));
    factors += factor;
  }
  log0("# scalebench comm: %s on %d rank(s), %d node(s); %s on %s\n", names.c_str(), n, nodes, backend, device.c_str());
  log0("# %d warm-up + %d timed iterations per size and form; time = the mean over ranks of each rank's mean per "
       "call; size as nccl-tests counts it; busbw = algbw * factor: %s\n",
       settings.warmup_iterations, settings.iterations, factors.c_str());
}

// The sweep's opening lines, then all_reduce_perf's header and column widths, the slowest rank's times,
// and the collective where the sweep runs more than the all-reduce.
void log_sweep_header(MpiSession& session, const RuntimeInfo& info, const std::string& model, const SweepPlan& plan,
                      const SweepSettings& settings, bool on_gpu, bool symmetric_windows) {
  log_collectives(plan, session.world().size(), session.node_count(), on_gpu ? "NCCL" : "MPI", info.rank_devices[0], settings);
  if (!plan.skip_note.empty()) log0("# %s\n", plan.skip_note.c_str());
  if (symmetric_windows) log0("# buffers: NCCL symmetric memory windows, as training's gradient buckets\n");
  log0("# model size: %s, %lld gradient elements (%s)\n", model.c_str(), static_cast<long long>(plan.model_elements),
       describe_input(plan.input).c_str());
  const bool named = !plan.only_all_reduce();
  log0("#\n#%83s%32s%22s\n", "out-of-place", "in-place", "slowest rank");
  log0("#%11s %13s %9s %7s %7s %8s %7s %7s %6s %8s %7s %7s %6s %10s %10s%s\n", "size", "count", "type", "redop", "root",
       "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong", "oop time", "ip time",
       named ? "  collective" : "");
  log0("#%11s %13s %9s %7s %7s %8s %7s %7s %6s %8s %7s %7s %6s %10s %10s\n", "(B)", "(elements)", "", "", "", "(us)",
       "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)");
}

void log_sweep_line(const SweepResult& r, const std::string& model, bool named) {
  const SweepPoint& p = r.point;
  const Collective& c = collective_of(p.collective);
  const std::string marker = p.is_model_size ? "  <- " + model + " gradients" : "";
  const std::string name = named ? "  " + std::string(c.name) : "";
  const SweepTiming& o = r.out_of_place;
  const SweepTiming& i = r.in_place;
  log0(" %11lld %13lld %9s %7s %7d %8.2f %7.2f %7.2f %6lld %8.2f %7.2f %7.2f %6lld %10.2f %10.2f%s%s\n",
       static_cast<long long>(p.bytes()), static_cast<long long>(p.count), nccl_tests_type_name(p.dtype), c.redop, c.root,
       o.time_us_mean, o.algbw_gbps, o.busbw_gbps, static_cast<long long>(o.wrong), i.time_us_mean, i.algbw_gbps,
       i.busbw_gbps, static_cast<long long>(i.wrong), o.time_us_max_rank, i.time_us_max_rank, name.c_str(), marker.c_str());
}

// all_reduce_perf's closing figures: the wrong elements, and both forms' busbw averaged over the sizes;
// and the first wrong result, for the error sentence.
struct SweepTotals {
  int64_t wrong = 0;
  double busbw_sum = 0;
  int busbw_count = 0;
  std::string first_wrong;  // "the out-of-place all-reduce of 4096 bytes (fp32) on rank 1"; "" when none

  void add(const SweepResult& r) {
    if (first_wrong.empty()) note_wrong(r.point, r.out_of_place, "out-of-place");
    if (first_wrong.empty()) note_wrong(r.point, r.in_place, "in-place");
    wrong += r.wrong();
    if (r.point.is_model_size) return;
    busbw_sum += r.out_of_place.busbw_gbps + r.in_place.busbw_gbps;
    busbw_count += 2;
  }

  void note_wrong(const SweepPoint& p, const SweepTiming& t, const char* form) {
    if (t.wrong == 0) return;
    first_wrong = std::string("the ") + form + " " + collective_of(p.collective).name + " of " + std::to_string(p.bytes()) +
                  " bytes (" + sweep_dtype_name(p.dtype) + ") on rank " + std::to_string(t.first_wrong_rank);
  }
};

// Each point run, printed, and written to the results file and the export where there are those.
SweepTotals run_sweep(SweepRunner& runner, const SweepPlan& plan, const SweepSettings& settings, const std::string& model,
                      CommResultsFile* results, TableExport* exported) {
  SweepTotals totals;
  for (const SweepPoint& p : plan.points) {
    const SweepResult r = runner.run(p, settings);
    totals.add(r);
    log_sweep_line(r, model, !plan.only_all_reduce());
    if (results) results->append(to_comm_row(r));
    if (exported) exported->add_row(export_row(r, model));
  }
  return totals;
}

// The error sentence and status when any checked element was wrong; 0 otherwise.
int sweep_status(Communicator& world, const SweepTotals& totals, bool on_gpu) {
  if (totals.wrong == 0) return 0;
  if (world.rank() == 0) {
    std::fprintf(stderr,
                 "scalebench: error: %lld element(s) of the checked collectives were wrong (column #wrong), first in %s; "
                 "the %s collectives corrupted data on this system\n",
                 static_cast<long long>(totals.wrong), totals.first_wrong.c_str(), on_gpu ? "NCCL" : "MPI");
  }
  return kExitFailure;
}
}  // namespace

int comm_command(MpiSession& session, const std::vector<std::string>& args, const std::string& command_line) {
  MpiCommunicator& world = session.world();
  // Checks that can fail run collectively: one sentence, every rank stops (train_command.cpp).
  std::optional<CliConfig> cli = parse_command(session, "comm", kComm, kSummary, args, command_line);
  if (!cli) return 0;  // --help
  TrainConfig& config = cli->train;  // --device, --out and --comm-model (config.model) live here
  const CommSettings& comm = cli->comm;
  const bool on_gpu = config.device == Device::Cuda;

  // Cheap checks first: values, then the model, the ranks' agreement, the output path, the device.
  SweepPlan plan = plan_sweep(world, config, comm, on_gpu);
  const SweepSettings settings{comm.iterations, comm.warmup_iterations};
  // The sizes up to 16 MiB in NCCL symmetric windows, as training's gradient buckets, where NCCL can.
  const bool symmetric_memory = true;
  const std::string config_json = sweep_config_json(config, comm, plan, settings, on_gpu && symmetric_memory);
  agree_on_configuration(world, config_json, config.collective_timeout);
  const auto output_locks = prepare_outputs(world, {config.out, "", "", ""});
  std::unique_ptr<TableExport> exported = prepare_table_export(world, config, {"comm"});
  run_collectively(world, [&] { check_device_available(config, session.local_size()); });
  SweepRunner runner(session, on_gpu, symmetric_memory, plan);

  const RuntimeInfo info = gather_runtime_info(session, on_gpu);
  const std::unique_ptr<CommResultsFile> results = open_comm_results(session, config, info, config_json, plan, settings, on_gpu);
  if (exported) exported->begin_table("comm", comm_export_columns());
  log_sweep_header(session, info, config.model, plan, settings, on_gpu, runner.uses_symmetric_windows());
  const SweepTotals totals = run_sweep(runner, plan, settings, config.model, results.get(), exported.get());
  log0("# Out of bounds values : %lld %s\n", static_cast<long long>(totals.wrong), totals.wrong == 0 ? "OK" : "FAILED");
  log0("# Avg bus bandwidth    : %g\n#\n", totals.busbw_count ? totals.busbw_sum / totals.busbw_count : 0.0);
  if (results) {
    results->close();
    log0("# results in %s\n", config.out.c_str());
  }
  exported.reset();
  return sweep_status(world, totals, on_gpu);
}

}  // namespace sb

// `scalebench comm`: the all-reduce sweep (nccl-tests' all_reduce_perf, on our communicators), plus one
// all-reduce of a model's gradient size. MPI on the CPU backend, NCCL on the GPU backend.
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
    "--device cuda uses NCCL on one GPU per rank. Exits with status 3 when any result is wrong.";

// The exported table (--csv, --json): all_reduce_perf's columns under its names, out of place then in
// place, then the slowest rank's times and the model marker. JSON keys are unique; CSV headers repeat
// as all_reduce_perf's do.
const std::vector<ExportColumn>& comm_export_columns() {
  static const std::vector<ExportColumn> columns = {
      {"size", "size"},           {"count", "count"},         {"type", "type"},           {"redop", "redop"},
      {"root", "root"},           {"oop_time", "time"},       {"oop_algbw", "algbw"},     {"oop_busbw", "busbw"},
      {"oop_wrong", "#wrong"},    {"ip_time", "time"},        {"ip_algbw", "algbw"},      {"ip_busbw", "busbw"},
      {"ip_wrong", "#wrong"},     {"oop_time_max", "oop_time_max"}, {"ip_time_max", "ip_time_max"},
      {"model", "model"}};
  return columns;
}

std::vector<ExportValue> export_row(const SweepResult& r, const std::string& model) {
  const SweepTiming& o = r.out_of_place;
  const SweepTiming& i = r.in_place;
  return {r.point.bytes(), r.point.count, std::string(nccl_tests_type_name(r.point.dtype)), std::string("sum"),
          int64_t{-1}, o.time_us_mean, o.algbw_gbps, o.busbw_gbps, o.wrong, i.time_us_mean, i.algbw_gbps, i.busbw_gbps,
          i.wrong, o.time_us_max_rank, i.time_us_max_rank, r.point.is_model_size ? model : std::string()};
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
  return row;
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
  std::vector<SweepDtype> dtypes;
  std::vector<std::string> skipped;
  std::string skip_note;
  ModelInput input;
  int64_t model_elements = 0;
  std::vector<SweepPoint> points;
  run_collectively(world, [&] {
    if (comm.iterations < 1) throw UserError("--iterations must be at least 1 (got " + std::to_string(comm.iterations) + ")");
    const std::vector<int64_t> sizes = power_of_two_sizes(comm.min_bytes, comm.max_bytes);
    for (SweepDtype d : parse_sweep_dtypes(comm.dtypes)) {
      if (on_gpu || mpi_can_reduce(d)) dtypes.push_back(d);
      else skipped.emplace_back(sweep_dtype_name(d));
    }
    if (dtypes.empty()) {
      throw UserError("--dtypes " + join(comm.dtypes, ",") +
                      ": the CPU backend (MPI) reduces only fp32 and fp64; bf16 and fp16 need --device cuda");
    }
    skip_note = skipped.empty() ? "" : join(skipped, ", ") + " skipped: MPI has no bf16/fp16 reduction; they need --device cuda";
    try {
      input = model_info(config.model).home_input;  // the gradient count depends on the input
    } catch (const UserError& e) {
      throw UserError(std::string("--comm-model: ") + e.what());
    }
    model_elements = count_elements(collect_params(build_model(config.model, input)));
    points = sweep_points(sizes, dtypes, model_elements);
    for (const SweepPoint& p : points) {
      if (!on_gpu && p.count > INT_MAX) {
        throw UserError("--max-bytes " + std::to_string(comm.max_bytes) + " asks for an all-reduce of " + std::to_string(p.count) +
                        " elements; MPI counts are int, so the CPU backend reduces at most " + std::to_string(INT_MAX) +
                        " elements per call (8 GiB of fp32)");
      }
    }
  });

  const SweepSettings settings{comm.iterations, comm.warmup_iterations};
  // The sizes up to 16 MiB in NCCL symmetric windows, as training's gradient buckets, where NCCL can.
  const bool symmetric_memory = true;
  std::ostringstream json;
  json << "{\"command\":\"comm\",\"device\":" << json_quote(name_of(config.device)) << ",\"out\":" << json_quote(config.out)
       << ",\"min_bytes\":" << comm.min_bytes << ",\"max_bytes\":" << comm.max_bytes
       << ",\"dtypes\":" << quote_list(comm.dtypes) << ",\"dtypes_run\":" << quote_list(names_of(dtypes))
       << ",\"iterations\":" << settings.iterations << ",\"warmup_iterations\":" << settings.warmup_iterations
       << ",\"comm_model\":" << json_quote(config.model) << ",\"model_elements\":" << model_elements
       << ",\"op\":\"sum\",\"out_of_place\":true,\"in_place\":true"
       << ",\"symmetric_memory\":" << (on_gpu && symmetric_memory ? "true" : "false") << "}";
  const std::string config_json = json.str();
  agree_on_configuration(world, config_json, config.collective_timeout);
  const auto output_locks = prepare_outputs(world, {config.out, "", "", ""});
  std::unique_ptr<TableExport> exported = prepare_table_export(world, config, {"comm"});
  run_collectively(world, [&] { check_device_available(config, session.local_size()); });

#ifdef SCALEBENCH_HAVE_CUDA
  std::unique_ptr<cuda::CudaAllreduceSweep> gpu;
  if (on_gpu) {  // the GPU, NCCL and the memory check come before the file: a refused run leaves none
    gpu = std::make_unique<cuda::CudaAllreduceSweep>(world, session.local_rank(), symmetric_memory);
    if (!gpu->symmetric_refusal().empty()) {
      const std::string refused = "symmetric memory off: " + gpu->symmetric_refusal();
      skip_note = skip_note.empty() ? refused : skip_note + "; " + refused;
    }
    int64_t largest = 0;
    for (const SweepPoint& p : points) largest = std::max(largest, p.bytes());
    run_collectively(world, [&] { gpu->check_fits(largest); });
  }
#endif
  const auto run_point = [&](const SweepPoint& p) {
#ifdef SCALEBENCH_HAVE_CUDA
    if (gpu) return gpu->run(p, settings);
#endif
    return run_cpu_allreduce(world, p, settings);
  };

  const RuntimeInfo info = gather_runtime_info(session, on_gpu);
  std::unique_ptr<CommResultsFile> results;
  if (!config.out.empty() && world.rank() == 0) {
    RunMetadata metadata = make_run_metadata(session, info, config, world.size());
    metadata.config_json = config_json;
    CommTableInfo table;
    table.backend = on_gpu ? "nccl" : "mpi";
    table.ranks = world.size();
    table.iterations = settings.iterations;
    table.warmup_iterations = settings.warmup_iterations;
    table.dtype_names = sweep_dtype_names();
    table.skipped_dtypes = skipped;
    table.note = skip_note;
    table.model = config.model;
    table.model_elements = model_elements;
    results = std::make_unique<CommResultsFile>(config.out, metadata, table);
  }

  if (exported) exported->begin_table("comm", comm_export_columns());

  const int n = world.size();
  log0("# scalebench comm: all-reduce (sum) on %d rank(s), %d node(s); %s on %s\n", n, session.node_count(),
       on_gpu ? "NCCL" : "MPI", info.rank_devices[0].c_str());
  log0("# %d warm-up + %d timed iterations per size and form; time = the mean over ranks of each rank's mean per "
       "all-reduce; busbw = algbw * 2(n-1)/n = algbw * %.3f\n",
       settings.warmup_iterations, settings.iterations, allreduce_busbw_factor(n));
  if (!skip_note.empty()) log0("# %s\n", skip_note.c_str());
#ifdef SCALEBENCH_HAVE_CUDA
  if (gpu && gpu->uses_symmetric_windows())
    log0("# buffers: NCCL symmetric memory windows, as training's gradient buckets\n");
#endif
  log0("# model size: %s, %lld gradient elements (%s)\n", config.model.c_str(), static_cast<long long>(model_elements),
       describe_input(input).c_str());
  // all_reduce_perf's header and column widths, then the slowest rank's times.
  log0("#\n#%83s%32s%22s\n", "out-of-place", "in-place", "slowest rank");
  log0("#%11s %13s %9s %7s %7s %8s %7s %7s %6s %8s %7s %7s %6s %10s %10s\n", "size", "count", "type", "redop", "root",
       "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong", "oop time", "ip time");
  log0("#%11s %13s %9s %7s %7s %8s %7s %7s %6s %8s %7s %7s %6s %10s %10s\n", "(B)", "(elements)", "", "", "", "(us)",
       "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)");

  int64_t total_wrong = 0;
  double busbw_sum = 0;
  int busbw_count = 0;
  for (const SweepPoint& p : points) {
    const SweepResult r = run_point(p);
    total_wrong += r.wrong();
    if (!p.is_model_size) {  // all_reduce_perf averages both forms' busbw over the sizes
      busbw_sum += r.out_of_place.busbw_gbps + r.in_place.busbw_gbps;
      busbw_count += 2;
    }
    const std::string marker = p.is_model_size ? "  <- " + config.model + " gradients" : "";
    const SweepTiming& o = r.out_of_place;
    const SweepTiming& i = r.in_place;
    log0(" %11lld %13lld %9s %7s %7d %8.2f %7.2f %7.2f %6lld %8.2f %7.2f %7.2f %6lld %10.2f %10.2f%s\n",
         static_cast<long long>(p.bytes()), static_cast<long long>(p.count), nccl_tests_type_name(p.dtype), "sum", -1,
         o.time_us_mean, o.algbw_gbps, o.busbw_gbps, static_cast<long long>(o.wrong), i.time_us_mean, i.algbw_gbps,
         i.busbw_gbps, static_cast<long long>(i.wrong), o.time_us_max_rank, i.time_us_max_rank, marker.c_str());
    if (results) results->append(to_comm_row(r));
    if (exported) exported->add_row(export_row(r, config.model));
  }
  log0("# Out of bounds values : %lld %s\n", static_cast<long long>(total_wrong), total_wrong == 0 ? "OK" : "FAILED");
  log0("# Avg bus bandwidth    : %g\n#\n", busbw_count ? busbw_sum / busbw_count : 0.0);
  if (results) {
    results->close();
    log0("# results in %s\n", config.out.c_str());
  }
  exported.reset();
  if (total_wrong > 0) {
    if (world.rank() == 0) {
      std::fprintf(stderr,
                   "scalebench: error: %lld element(s) of the checked all-reduces were wrong (column #wrong); the %s "
                   "all-reduce corrupted data on this system\n",
                   static_cast<long long>(total_wrong), on_gpu ? "NCCL" : "MPI");
    }
    return kExitFailure;
  }
  return 0;
}

}  // namespace sb

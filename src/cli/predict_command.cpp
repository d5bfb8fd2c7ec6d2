// `scalebench predict`: the step model of docs/prediction.md, calibrated by a `scale` study and a `comm`
// sweep, evaluated at the asked GPU counts. Host code only; it runs on one process.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>

#include "cli/commands.h"
#include "cli/run_metadata.h"
#include "cli/runtime_info.h"
#include "core/enum_names.h"
#include "core/error.h"
#include "core/json_text.h"
#include "metrics/table_export.h"
#include "models/registry.h"
#include "nn/flops.h"
#include "predict/comm_inputs.h"
#include "predict/leave_one_out.h"
#include "predict/network_spec.h"
#include "predict/predict_file.h"
#include "predict/predict_options.h"
#include "predict/scaling_prediction.h"
#include "predict/study_inputs.h"

namespace sb {
namespace {

using namespace sb::predict;

constexpr int64_t kDefaultLargestGpus = 1024;
constexpr double kExposedShares[] = {0.05, 0.20};
constexpr Scaling kScalings[] = {Scaling::Weak, Scaling::Strong};

// Everything the prediction needs, read and checked before any of it is computed.
struct Inputs {
  PredictOptions options;
  StudyInputs study;
  CommFit intra;
  std::optional<CommFit> inter_file;
  NetworkSpec network;
  int64_t batch = 0;
  std::vector<int64_t> gpus;
  std::vector<double> bucket_mibs;
};

AllreduceModel allreduce_model_of(const Inputs& in) {
  AllreduceModel m;
  m.intra = in.intra.fit.level;
  m.intra_measured = MeasuredCurve{in.intra.ranks, in.intra.samples};
  if (in.inter_file) m.inter = in.inter_file->fit.level;
  else if (in.network.inter) m.inter = in.network.inter;
  if (m.inter) m.gpus_per_node = in.network.gpus_per_node > 0 ? in.network.gpus_per_node : in.intra.ranks;
  return m;
}

std::vector<int64_t> default_gpus(const AllreduceModel& model, const NetworkSpec& network) {
  const int64_t largest = network.nodes > 0 && model.inter ? network.nodes * model.gpus_per_node : kDefaultLargestGpus;
  std::vector<int64_t> out;
  for (int64_t n = 1; n <= largest; n *= 2)
    if (model.layout_problem(n).empty()) out.push_back(n);
  if (out.back() != largest && model.layout_problem(largest).empty()) out.push_back(largest);
  return out;
}

Inputs read_inputs(const std::vector<std::string>& args) {
  Inputs in;
  in.options = parse_predict_options(args);
  if (in.options.help) return in;
  const PredictOptions& o = in.options;
  if (!o.network.empty()) in.network = parse_network_spec(o.network);
  if (!o.comm_inter.empty() && in.network.inter) {
    throw UserError("--comm-inter and --network's inter= both describe the link between nodes; give one of them");
  }
  if (in.network.gpus_per_node > 0 && !in.network.inter && o.comm_inter.empty()) {
    throw UserError("--network '" + o.network + "' lays out nodes but names no link between them; add inter=NAME:BANDWIDTH "
                    "(e.g. inter=ib:200Gbps) or give --comm-inter");
  }
  if (!o.out.empty()) check_predict_output_free(o.out);
  check_table_exports_free({o.csv, o.json, false}, o.check ? std::vector<std::string>{"predict", "check"} : std::vector<std::string>{"predict"});
  in.study = read_study(o.study);
  const std::string dtype = in.study.allreduce_bf16 ? "bf16" : "fp32";
  in.intra = read_comm_fit("--comm", o.comm, dtype);
  if (!o.comm_inter.empty()) in.inter_file = read_comm_fit("--comm-inter", o.comm_inter, dtype);

  const AllreduceModel model = allreduce_model_of(in);
  in.gpus = o.gpus.empty() ? default_gpus(model, in.network) : o.gpus;
  std::sort(in.gpus.begin(), in.gpus.end());
  in.gpus.erase(std::unique(in.gpus.begin(), in.gpus.end()), in.gpus.end());
  for (int64_t n : in.gpus) {
    if (const std::string problem = model.layout_problem(n); !problem.empty())
      throw UserError("--gpus: " + problem + "; give multiples of " + std::to_string(model.gpus_per_node) + " past one node");
  }
  in.batch = o.batch_size > 0 ? o.batch_size : in.study.run_batch_size;
  const ComputeProfile profile(one_gpu_compute(in.study));
  if (!profile.at(static_cast<double>(in.batch))) {
    throw UserError("--batch-size " + std::to_string(in.batch) + ": the study measured 1 GPU at batch " + std::to_string(profile.smallest_batch()) +
                    (profile.smallest_batch() == profile.largest_batch() ? "" : " to " + std::to_string(profile.largest_batch())) +
                    " only; measure it with `scalebench scale --gpus 1 --sweep-batch-size " + std::to_string(in.batch) + "`");
  }
  in.bucket_mibs = o.bucket_mibs;
  if (std::find(in.bucket_mibs.begin(), in.bucket_mibs.end(), in.study.bucket_mib) == in.bucket_mibs.end())
    in.bucket_mibs.push_back(in.study.bucket_mib);
  std::sort(in.bucket_mibs.begin(), in.bucket_mibs.end());
  return in;
}

StepModel step_model_of(const Inputs& in, std::string& ready_source) {
  const LayerSpec spec = build_model(in.study.model, in.study.input);
  std::vector<ParamSpec> params = collect_params(spec);
  const int64_t total = count_elements(params);
  const Shape sample{in.study.input.channels, in.study.input.height, in.study.input.width};
  std::optional<GradientReadyCurve> ready;
  if (in.study.bucket_ready_s) {
    const int64_t elements = bucket_elements_of_mib(in.study.bucket_mib);
    const std::vector<Bucket> plan = plan_buckets(params, elements, default_tail_elements(elements));
    try {
      ready = GradientReadyCurve::from_recorded(plan, *in.study.bucket_ready_s, in.study.bucket_ready_backward_s, total);
      ready_source = "recorded";
    } catch (const std::invalid_argument& e) {
      throw UserError("--study '" + in.study.path + "': its recorded bucket_ready does not fit the training's bucket plan (" + e.what() + ")");
    }
  } else {
    ready = GradientReadyCurve::from_layer_flops(forward_flops_per_layer(spec, sample), params);
    ready_source = "flops";
  }
  return StepModel{ComputeProfile(one_gpu_compute(in.study)), std::move(params), *ready, allreduce_model_of(in),
                   in.study.allreduce_bf16 ? 2.0 : 4.0, in.study.device == Device::Cuda, {}};
}

std::string join_counts(const std::vector<int64_t>& counts) {
  std::string out;
  for (int64_t n : counts) {
    if (!out.empty()) out += ',';
    out += std::to_string(n);
  }
  return out;
}

std::string config_json_of(const Inputs& in) {
  const PredictOptions& o = in.options;
  std::ostringstream json;
  json << "{\"command\":\"predict\",\"study\":" << json_quote(o.study) << ",\"comm\":" << json_quote(o.comm)
       << ",\"comm_inter\":" << json_quote(o.comm_inter) << ",\"network\":" << json_quote(o.network) << ",\"gpus\":["
       << join_counts(in.gpus) << "],\"batch_size\":" << in.batch << ",\"bucket_mibs\":[";
  for (size_t i = 0; i < in.bucket_mibs.size(); ++i) json << (i ? "," : "") << in.bucket_mibs[i];
  json << "],\"check\":" << (o.check ? "true" : "false") << ",\"out\":" << json_quote(o.out) << "}";
  return json.str();
}

PredictRow row_of(const ScalingPoint& p, const ScalingPoint& best, const AllreduceModel& model) {
  PredictRow r;
  r.gpus = p.gpus;
  r.nodes = model.nodes(p.gpus);
  r.scaling = static_cast<int64_t>(p.scaling);
  r.per_gpu_batch = p.per_gpu_batch;
  r.bucket_mib = p.bucket_mib;
  r.buckets = p.buckets;
  r.step_s = p.step_s;
  r.images_per_s = p.images_per_s;
  r.efficiency = p.efficiency;
  r.exposed_comm_fraction = p.exposed_comm_fraction;
  r.comm_s = p.comm_s;
  r.slowest_rank_fraction = p.slowest_rank_fraction;
  r.best_bucket_mib = best.bucket_mib;
  r.best_images_per_s = best.images_per_s;
  r.best_exposed_comm_fraction = best.exposed_comm_fraction;
  return r;
}

void print_header(const Inputs& in, const StepModel& model, const std::string& ready_source) {
  const ComputeProfile& c = model.compute;
  std::printf("# predict: %s (%s), %zu gradient tensors, bucket %g MiB; compute from the 1-GPU runs of %s at batch %lld",
              in.study.model.c_str(), name_of(in.study.mode), model.params.size(), in.study.bucket_mib, in.study.path.c_str(),
              static_cast<long long>(c.smallest_batch()));
  if (c.largest_batch() != c.smallest_batch()) std::printf(" to %lld", static_cast<long long>(c.largest_batch()));
  if (!model.buckets_overlap_backward) {
    std::printf("\n# the study ran on the CPU engine, which all-reduces the whole gradient after backward: no overlap, one all-reduce\n");
  } else {
    if (ready_source == "recorded")
      std::printf("\n# bucket ready times: recorded in the study (configuration %s)\n", in.study.bucket_ready_group.c_str());
    else
      std::printf("\n# bucket ready times: from the layers' backward FLOPs (none recorded)\n");
  }
  const RingLevel& intra = model.allreduce.intra;
  std::printf("# all-reduce (%s): ring alpha %.2f us, beta %.2f GB/s, fitted to %lld %s sizes on %lld ranks of %s (worst error %.0f%%); the measured times themselves at %lld ranks within its sizes\n",
              in.intra.backend.c_str(), intra.alpha_s * 1e6, intra.beta_bytes_per_s / 1e9, static_cast<long long>(in.intra.sizes),
              in.intra.dtype.c_str(), static_cast<long long>(in.intra.ranks), in.intra.path.c_str(), in.intra.fit.worst_relative_error * 100,
              static_cast<long long>(in.intra.ranks));
  if (model.allreduce.inter) {
    const RingLevel& inter = *model.allreduce.inter;
    std::printf("# between nodes of %lld GPUs: ring alpha %.2f us, beta %.2f GB/s per GPU, from %s\n",
                static_cast<long long>(model.allreduce.gpus_per_node), inter.alpha_s * 1e6, inter.beta_bytes_per_s / 1e9,
                in.inter_file ? ("--comm-inter " + in.inter_file->path).c_str() : ("--network " + in.options.network).c_str());
    if (model.allreduce.gpus_per_node > in.intra.ranks)
      std::printf("# note: the intra-node ring is extrapolated from %lld to %lld ranks\n", static_cast<long long>(in.intra.ranks),
                  static_cast<long long>(model.allreduce.gpus_per_node));
  } else {
    std::printf("# one flat ring over every GPU (no --network or --comm-inter): the comm file's interconnect throughout\n");
  }
}

// The overlap parameter's value as printed: the wait in ms, the ratios as they are.
std::string overlap_value_text(OverlapParameter parameter, double value) {
  char text[32];
  if (parameter == OverlapParameter::Wait) std::snprintf(text, sizeof text, "%.3g ms", value * 1e3);
  else std::snprintf(text, sizeof text, "%.4g", value);
  return text;
}

std::string calibration_text(const OverlapCalibration& c) {
  char text[192];
  std::snprintf(text, sizeof text, "%s %s at the measured %lld GPUs%s", name_of(c.parameter), overlap_value_text(c.parameter, c.value()).c_str(),
                static_cast<long long>(c.gpus), c.at_bound ? " (the fit stopped at its bound, short of the measured step)" : "");
  return text;
}

std::string compute_factor_text(const ComputeFactor& f) {
  char text[160];
  std::snprintf(text, sizeof text, "%.4g outside backward%s, %.4g on backward%s", f.value, f.at_bound ? " (clamped to its bound)" : "",
                f.backward, f.backward_at_bound ? " (clamped to its bound)" : "");
  return text;
}

void print_calibration(const StepModel& model) {
  const OverlapCalibration& c = model.calibration;
  if (c.gpus == 0) {
    std::printf("# multi-GPU calibration: none possible (no count of 2 or more GPUs measured at this batch that the model can lay out "
                "and has the compute for): the multi-GPU counts take the 1-GPU compute unchanged, and backward and the all-reduces "
                "do not interact\n");
    return;
  }
  const char* level = model.allreduce.nodes(c.gpus) > 1 ? "that span nodes" : "within one node";
  if (c.compute.measured) {
    std::printf("# compute factors: %s at the measured %lld GPUs (the step's parts there over the 1-GPU run's; backward with the "
                "all-reduces beside it); applied to the compute at the multi-GPU counts%s%s\n",
                compute_factor_text(c.compute).c_str(), static_cast<long long>(c.gpus), model.allreduce.inter ? " " : "",
                model.allreduce.inter ? level : "");
  } else {
    std::printf("# compute factors: not measured (the study lacks the phase columns or the 1-GPU runs at that per-GPU batch): 1\n");
  }
  std::printf("# overlap calibration: %s%s", calibration_text(c).c_str(),
              c.at_bound ? "" : ", so that the simulated step there, with the compute factors, equals its median measured step");
  if (model.allreduce.inter) std::printf("; applied only at counts %s, not carried to another interconnect", level);
  if (c.parameter == OverlapParameter::CommScale) {
    std::printf("; the factor corrects the %s, so it applies only where the model uses those",
                model.allreduce.uses_measured_curve(c.gpus) ? "sweep's measured times" : "fitted ring's times");
  }
  std::printf("\n");
  if (c.rank_spread > 0) {
    std::printf("# ranks' spread: %.2f%% of the compute (standard deviation of each rank's compute about the step's mean over the "
                "ranks, sampled steps at the measured %lld GPUs); the step waits for the slowest of N ranks, E[max of N] standard "
                "deviations, counted beyond the %lld GPUs' own (docs/prediction.md, \"The slowest rank\")\n",
                c.rank_spread * 100, static_cast<long long>(c.gpus), static_cast<long long>(c.gpus));
  } else {
    std::printf("# ranks' spread: not measured (the study sampled no steps at the measured %lld GPUs: --sample-steps); the step "
                "waits for no slower rank beyond them\n",
                static_cast<long long>(c.gpus));
  }
}

void print_rows(const std::vector<PredictRow>& rows) {
  std::printf("\n%-7s %6s %5s %9s %12s %10s %8s %8s %12s %12s %8s\n", "scaling", "gpus", "nodes", "batch/gpu", "images/s", "efficiency",
              "exposed", "slowest", "best bucket", "images/s", "exposed");
  for (const PredictRow& r : rows) {
    std::printf("%-7s %6lld %5lld %9.1f %12.1f %9.1f%% %7.1f%% %7.1f%% %8g MiB %12.1f %7.1f%%\n", name_of(static_cast<Scaling>(r.scaling)),
                static_cast<long long>(r.gpus), static_cast<long long>(r.nodes), r.per_gpu_batch, r.images_per_s, r.efficiency * 100,
                r.exposed_comm_fraction * 100, r.slowest_rank_fraction * 100, r.best_bucket_mib, r.best_images_per_s,
                r.best_exposed_comm_fraction * 100);
  }
  std::printf("# exposed = the communication the step waits for after backward; slowest = the wait for the slowest rank beyond the "
              "ranks' mean compute (both shares of the step)\n");
}

void print_check(const std::vector<CheckRow>& rows) {
  if (rows.empty()) {
    std::printf("\n# check: the study measured none of the counts of --gpus above 1 at this batch; nothing to compare\n");
    return;
  }
  std::printf("\n# check: each count N predicted without its own measurement (from the 1-GPU runs, the comm sweep, and the compute "
              "factors and the overlap calibrated at the largest measured count below N, none below 2)\n");
  std::printf("%6s %7s %12s %8s %9s %15s %11s %8s %12s %8s %11s %12s %8s\n", "gpus", "repeats", "measured s", "spread", "calib at",
              "factors f/b", "overlap", "ranks", "predicted s", "error", "naive from", "naive s", "error");
  std::string uncalibrated;
  for (const CheckRow& r : rows) {
    const auto parameter = static_cast<OverlapParameter>(r.calibration_parameter);
    char overlap[48], factor[48];
    const char* symbol = parameter == OverlapParameter::CommScale ? "k" : parameter == OverlapParameter::Wait ? "w" : "c";
    const double shown = parameter == OverlapParameter::Wait ? r.calibration_value * 1e3 : r.calibration_value;  // the wait in ms
    std::snprintf(overlap, sizeof overlap, "%s=%.3g%s%s%s", symbol, shown, parameter == OverlapParameter::Wait ? "ms" : "",
                  r.calibration_at_bound ? "!" : "", r.calibration_applied ? "" : "x");
    std::snprintf(factor, sizeof factor, "%.4g%s/%.4g%s%s", r.compute_factor, r.compute_factor_at_bound ? "!" : "", r.backward_factor,
                  r.backward_factor_at_bound ? "!" : "", r.compute_factor_applied ? "" : "x");
    const bool calibrated = r.calibration_gpus != 0;
    if (!calibrated) uncalibrated += (uncalibrated.empty() ? "" : ", ") + std::to_string(r.gpus);
    char ranks[16];
    std::snprintf(ranks, sizeof ranks, "%.2f%%", r.rank_spread * 100);
    std::printf("%6lld %7lld %12.6f %7.1f%% %9lld %15s %11s %8s %12.6f %+7.1f%% %11lld %12.6f %+7.1f%%\n", static_cast<long long>(r.gpus),
                static_cast<long long>(r.repeats), r.measured_step_s, r.repeat_spread * 100, static_cast<long long>(r.calibration_gpus),
                calibrated && !std::isnan(r.compute_factor) ? factor : "none", calibrated ? overlap : "none",
                r.rank_spread > 0 ? ranks : "none", r.predicted_step_s, r.predicted_error * 100, static_cast<long long>(r.naive_from_gpus),
                r.naive_step_s, r.naive_error * 100);
  }
  std::printf("# factors = the per-GPU compute at the calibration count over 1 GPU's, f outside backward, b on backward; overlap: "
              "c = backward's contention beside an all-reduce, k = the factor on the all-reduce times, w = the wait after backward; ! = "
              "at its bound; x = not carried to this count (another level, or all-reduce times of another source); ranks = the ranks' "
              "spread measured at the calibration count\n");
  if (!uncalibrated.empty()) {
    std::printf("# no multi-GPU calibration was possible at %s GPUs: no multi-GPU count below was measured, so the prediction is the "
                "1-GPU compute and the sweep's all-reduces without any measured multi-GPU effect (docs/prediction.md, \"Where it "
                "fails\")\n",
                uncalibrated.c_str());
  }
}

// The inputs read and checked, each check a sentence naming the option, and the step model made of them;
// nothing when --help asked for the help text (printed here).
std::optional<StepModel> read_step_model(MpiSession& session, const std::vector<std::string>& args, Inputs& in,
                                         std::string& ready_source) {
  const bool root = session.rank() == 0;
  if (session.size() != 1)
    throw AgreedError("predict runs on one process; start it without mpirun (or with -np 1)", session.size(), root);
  std::optional<StepModel> model;
  try {  // every check before any work
    in = read_inputs(args);
    if (in.options.help) {
      std::fputs(predict_help_text().c_str(), stdout);
      return std::nullopt;
    }
    model.emplace(step_model_of(in, ready_source));
  } catch (const UserError& e) {
    throw AgreedError(e.what(), session.size(), root);
  }
  model->calibration = calibration_below(*model, in.study, in.batch, std::numeric_limits<int64_t>::max());
  return model;
}

// A row per scaling and GPU count; the strong-scaling counts that the study's batches can't reach are
// left out (weak scaling keeps the batch checked on reading).
std::vector<PredictRow> predict_rows(const StepModel& m, const Inputs& in, std::vector<int64_t>& unmeasured_strong) {
  std::vector<PredictRow> rows;
  for (Scaling scaling : kScalings) {
    for (int64_t n : in.gpus) {
      const std::optional<ScalingPoint> p = predict_point(m, n, scaling, in.batch, in.study.bucket_mib);
      const std::optional<ScalingPoint> best = best_bucket_point(m, n, scaling, in.batch, in.bucket_mibs);
      if (!p || !best) {
        unmeasured_strong.push_back(n);
        continue;
      }
      rows.push_back(row_of(*p, *best, m.allreduce));
    }
  }
  return rows;
}

void print_unmeasured_strong(const std::vector<int64_t>& unmeasured_strong, const StepModel& m, int64_t batch) {
  if (unmeasured_strong.empty()) return;
  const int64_t smallest_needed = std::max<int64_t>(1, batch / unmeasured_strong.back());
  std::printf("# strong scaling at %s GPUs is left out: it needs the 1-GPU compute at per-GPU batches down to %lld, and the "
              "study measured %lld at the smallest; measure them with `scalebench scale --gpus 1 --sweep-batch-size %lld,...,%lld`\n",
              join_counts(unmeasured_strong).c_str(), static_cast<long long>(smallest_needed),
              static_cast<long long>(m.compute.smallest_batch()), static_cast<long long>(smallest_needed),
              static_cast<long long>(batch));
}

// The prediction file's attributes: the inputs, the all-reduce fits and the calibration.
PredictInfo predict_info(const Inputs& in, const StepModel& m, const std::string& ready_source) {
  PredictInfo info;
  info.study = in.options.study;
  info.comm = in.options.comm;
  info.comm_inter = in.options.comm_inter;
  info.network = in.options.network;
  info.scaling_names = {name_of(Scaling::Strong), name_of(Scaling::Weak)};  // indexed by the code
  info.intra_alpha_s = m.allreduce.intra.alpha_s;
  info.intra_beta_bytes_per_s = m.allreduce.intra.beta_bytes_per_s;
  info.intra_fit_error = in.intra.fit.worst_relative_error;
  info.intra_ranks = in.intra.ranks;
  if (m.allreduce.inter) {
    info.inter_alpha_s = m.allreduce.inter->alpha_s;
    info.inter_beta_bytes_per_s = m.allreduce.inter->beta_bytes_per_s;
    info.gpus_per_node = m.allreduce.gpus_per_node;
  }
  info.ready_source = ready_source;
  info.calibration_parameter_names = overlap_parameter_names();
  info.calibration_gpus = m.calibration.gpus;
  info.calibration_parameter = static_cast<int64_t>(m.calibration.parameter);
  info.calibration_value = m.calibration.value();
  info.calibration_at_bound = m.calibration.at_bound ? 1 : 0;
  if (m.calibration.compute.measured) {
    info.compute_factor = m.calibration.compute.value;
    info.compute_factor_at_bound = m.calibration.compute.at_bound ? 1 : 0;
    info.backward_factor = m.calibration.compute.backward;
    info.backward_factor_at_bound = m.calibration.compute.backward_at_bound ? 1 : 0;
  }
  info.rank_spread = m.calibration.rank_spread;
  return info;
}

// For each scaling, the first GPU counts where exposed communication passes each share: printed, and
// recorded in `info`.
void find_exposed_shares(PredictInfo& info, const StepModel& m, const Inputs& in) {
  info.exposed_5pct_gpus.assign(info.scaling_names.size(), -1);
  info.exposed_20pct_gpus.assign(info.scaling_names.size(), -1);
  std::printf("\n");
  for (Scaling scaling : kScalings) {
    std::vector<int64_t>* targets[] = {&info.exposed_5pct_gpus, &info.exposed_20pct_gpus};
    std::string line;
    for (size_t i = 0; i < 2; ++i) {
      const std::optional<int64_t> n =
          first_gpus_with_exposed_share(m, scaling, in.batch, in.study.bucket_mib, in.gpus.back(), kExposedShares[i]);
      (*targets[i])[static_cast<size_t>(scaling)] = n.value_or(-1);
      line += (i ? ", " : "") + std::to_string(static_cast<int>(kExposedShares[i] * 100)) + "% at " +
              (n ? std::to_string(*n) + " GPUs" : "none up to " + std::to_string(in.gpus.back()));
    }
    std::printf("# %s scaling: exposed communication passes %s (bucket %g MiB)\n", name_of(scaling), line.c_str(), in.study.bucket_mib);
  }
}

void write_prediction_file(MpiSession& session, const std::string& command_line, const Inputs& in, const PredictInfo& info,
                           const std::vector<PredictRow>& rows, const std::vector<CheckRow>& check) {
  const RuntimeInfo runtime = gather_runtime_info(session, false);
  TrainConfig config;
  config.command_line = command_line;
  RunMetadata metadata = make_run_metadata(session, runtime, config, 1);
  metadata.config_json = config_json_of(in);
  write_predict_file(in.options.out, metadata, info, rows, in.options.check, check);
  std::printf("# prediction in %s\n", in.options.out.c_str());
}

// The tables "predict" and, with --check, "check" (--csv, --json).
void export_prediction(const Inputs& in, const std::vector<PredictRow>& rows, const std::vector<CheckRow>& check) {
  TableExport exported({in.options.csv, in.options.json, false});
  exported.begin_table("predict", export_columns(predict_columns()));
  for (const PredictRow& r : rows) exported.add_row(export_values(predict_columns(), &r));
  if (in.options.check) {
    exported.begin_table("check", export_columns(check_columns()));
    for (const CheckRow& r : check) exported.add_row(export_values(check_columns(), &r));
  }
}

}  // namespace

int predict_command(MpiSession& session, const std::vector<std::string>& args, const std::string& command_line) {
  Inputs in;
  std::string ready_source;
  const std::optional<StepModel> model = read_step_model(session, args, in, ready_source);
  if (!model) return 0;  // --help
  const StepModel& m = *model;
  print_header(in, m, ready_source);
  print_calibration(m);

  std::vector<int64_t> unmeasured_strong;
  const std::vector<PredictRow> rows = predict_rows(m, in, unmeasured_strong);
  print_rows(rows);
  print_unmeasured_strong(unmeasured_strong, m, in.batch);
  PredictInfo info = predict_info(in, m, ready_source);
  find_exposed_shares(info, m, in);
  std::vector<CheckRow> check;
  if (in.options.check) {
    check = leave_one_out(m, in.study, in.batch, in.gpus);
    print_check(check);
  }

  if (!in.options.out.empty()) write_prediction_file(session, command_line, in, info, rows, check);
  if (!in.options.csv.empty() || !in.options.json.empty()) export_prediction(in, rows, check);
  return 0;
}

}  // namespace sb

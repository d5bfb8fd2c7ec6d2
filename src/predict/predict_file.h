// The results file of `scalebench predict` (file kind `predict`, docs/results_schema.md): the usual root
// attributes (metrics/results_file.h), a /predict table with one row per GPU count and scaling, and,
// with --check, a /check table with one row per measured GPU count. An existing file is never
// overwritten: the file is written beside the path and linked into place only where nothing is there.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "metrics/results_file.h"
#include "metrics/results_schema.h"

namespace sb::predict {

// 2: the overlap calibration; 3: the compute factor; 4: the backward factor and the `wait` parameter;
// 5: the ranks' spread and the slowest rank's share of the step.
constexpr int64_t kPredictVersion = 5;

// /predict: X(type, name, value where not measured, unit), as results_schema.h.
#define SB_PREDICT_COLUMNS(X)                                \
  X(int64_t, gpus, 0, "1")                                   \
  X(int64_t, nodes, 0, "1")                                  \
  X(int64_t, scaling, -1, "1")                               \
  X(double, per_gpu_batch, kNotMeasured, "1")                \
  X(double, bucket_mib, kNotMeasured, "MiB")                 \
  X(int64_t, buckets, 0, "1")                                \
  X(double, step_s, kNotMeasured, "s")                       \
  X(double, images_per_s, kNotMeasured, "images/s")          \
  X(double, efficiency, kNotMeasured, "1")                   \
  X(double, exposed_comm_fraction, kNotMeasured, "1")        \
  X(double, comm_s, kNotMeasured, "s")                       \
  X(double, slowest_rank_fraction, kNotMeasured, "1")        \
  X(double, best_bucket_mib, kNotMeasured, "MiB")            \
  X(double, best_images_per_s, kNotMeasured, "images/s")     \
  X(double, best_exposed_comm_fraction, kNotMeasured, "1")

// /check: the leave-one-out comparison at each GPU count the study measured, with the multi-GPU
// calibration its prediction used (calibration_gpus 0: none; calibration_parameter a code of the
// table's `calibration_parameter_names`, calibration_value a ratio, or seconds for `wait`;
// compute_factor and backward_factor NaN where they were not measured; rank_spread the ranks' spread
// measured there, 0 where none was).
#define SB_PREDICT_CHECK_COLUMNS(X)                   \
  X(int64_t, gpus, 0, "1")                            \
  X(int64_t, scaling, -1, "1")                        \
  X(int64_t, batch_size, 0, "1")                      \
  X(int64_t, repeats, 0, "1")                         \
  X(double, measured_step_s, kNotMeasured, "s")       \
  X(double, repeat_spread, kNotMeasured, "1")         \
  X(int64_t, calibration_gpus, 0, "1")                \
  X(int64_t, calibration_parameter, 0, "1")           \
  X(double, calibration_value, kNotMeasured, "1")     \
  X(int64_t, calibration_at_bound, 0, "1")            \
  X(int64_t, calibration_applied, 0, "1")             \
  X(double, compute_factor, kNotMeasured, "1")        \
  X(int64_t, compute_factor_at_bound, 0, "1")         \
  X(double, backward_factor, kNotMeasured, "1")       \
  X(int64_t, backward_factor_at_bound, 0, "1")        \
  X(int64_t, compute_factor_applied, 0, "1")          \
  X(double, rank_spread, kNotMeasured, "1")           \
  X(double, predicted_step_s, kNotMeasured, "s")      \
  X(double, predicted_error, kNotMeasured, "1")       \
  X(int64_t, naive_from_gpus, 0, "1")                 \
  X(double, naive_step_s, kNotMeasured, "s")          \
  X(double, naive_error, kNotMeasured, "1")

struct PredictRow {
  SB_PREDICT_COLUMNS(SB_ROW_FIELD)
};
struct CheckRow {
  SB_PREDICT_CHECK_COLUMNS(SB_ROW_FIELD)
};

std::span<const Column> predict_columns();
std::span<const Column> check_columns();

// The /predict table's attributes: the model's calibration and the thresholds.
struct PredictInfo {
  std::string study;                      // the input files as given
  std::string comm;
  std::string comm_inter;                 // "" when none
  std::string network;                    // --network as given, "" when none
  std::vector<std::string> scaling_names; // the `scaling` codes' names
  double intra_alpha_s = kNotMeasured;
  double intra_beta_bytes_per_s = kNotMeasured;
  double intra_fit_error = kNotMeasured;  // the worst relative error of the fit over the measured sizes
  int64_t intra_ranks = 0;                // the ranks the comm file was measured on
  double inter_alpha_s = kNotMeasured;    // NaN: one flat ring
  double inter_beta_bytes_per_s = kNotMeasured;
  int64_t gpus_per_node = 0;              // 0: one flat ring
  std::string ready_source;               // "flops" or "recorded"
  // The overlap calibration of the /predict rows (docs/prediction.md): the count it was fitted at (0:
  // none), the parameter's code in `calibration_parameter_names`, its value, 1 when the fit hit a bound.
  std::vector<std::string> calibration_parameter_names;
  int64_t calibration_gpus = 0;
  int64_t calibration_parameter = 0;
  double calibration_value = kNotMeasured;
  int64_t calibration_at_bound = 0;
  double compute_factor = kNotMeasured;   // outside backward, measured at calibration_gpus; NaN: not measured (factor 1)
  int64_t compute_factor_at_bound = 0;
  double backward_factor = kNotMeasured;  // backward's, measured with compute_factor
  int64_t backward_factor_at_bound = 0;
  double rank_spread = 0;                 // the ranks' spread measured at calibration_gpus (rank_spread.h); 0: none
  // The first GPU count whose exposed communication reaches 5% and 20% of the step, per scaling code;
  // -1 when none up to the largest count predicted.
  std::vector<int64_t> exposed_5pct_gpus;
  std::vector<int64_t> exposed_20pct_gpus;
};

// Throws sb::UserError naming --out when `path` exists or cannot be written there (before any work).
void check_predict_output_free(const std::string& path);

// Writes the whole file; the rows of `check` only when `with_check`.
void write_predict_file(const std::string& path, const RunMetadata& metadata, const PredictInfo& info,
                        const std::vector<PredictRow>& rows, bool with_check, const std::vector<CheckRow>& check);

}  // namespace sb::predict

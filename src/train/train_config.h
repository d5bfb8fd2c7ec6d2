// Everything a training run is configured by. The CLI fills it from the option rows
// (train/train_options.h), which also check, record and restore it; the trainer, the engines and the
// results file read it. It hashes the same on every rank or the job refuses to run.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "core/dtype.h"
#include "data/image_decoding.h"
#include "data/input_source.h"
#include "optim/optim_config.h"
#include "optim/optimizer_kind.h"
#include "optim/schedule_kind.h"
#include "train/parallel_mode.h"
#include "train/run_choices.h"

namespace sb {

struct TrainConfig {
  std::string model = "mnist-cnn";
  std::string data = "fashion-mnist";
  int epochs = 1;
  int64_t batch_size = 64;  // per rank (weak) or global (strong); per replica (weak) with --parallel dp
  Scaling scaling = Scaling::Weak;
  int accumulate_steps = 1;  // micro-batches of batch_size per optimizer step (gradient accumulation)
  int64_t eval_batch_size = 1000;  // per rank
  int64_t train_limit = 0;         // 0: every training sample
  int64_t test_limit = 0;          // 0: every test sample
  bool drop_last = false;
  bool augment = false;  // CIFAR random crop + flip
  bool dropout = true;   // false turns every dropout layer into the identity (equivalence tests)
  bool zero_init_residual = false;  // zero the last BN weight of each residual branch (torchvision's option)

  // The optimizer options; optimizer_spec_for (train/run_setup.h) resolves them for both engines.
  OptimizerKind optimizer = OptimizerKind::Sgd;
  double lr = 0.01;
  double momentum = SgdConfig{}.momentum;
  double dampening = SgdConfig{}.dampening;
  bool nesterov = SgdConfig{}.nesterov;
  std::optional<double> weight_decay;  // unset: the optimizer's default (0; 1e-2 for adamw)
  double rho = AdadeltaConfig{}.rho;
  double eps = -1.0;  // optimizer epsilon; <0 picks the optimizer's own default
  double beta1 = AdamConfig{}.beta1, beta2 = AdamConfig{}.beta2;
  ScheduleKind scheduler = ScheduleKind::None;
  int step_size = 1;
  double gamma = 0.7;
  double warmup_epochs = 0.0;  // cosine: linear warm-up length in epochs (fractions allowed)
  double min_lr = 0.0;
  bool scale_lr = false;  // multiply the LR by the number of ranks

  uint64_t seed = 1;
  Device device = Device::Cpu;
  Precision precision = Precision::FP32;
  Layout layout = Layout::NHWC;  // of the activations (CUDA backend)
  bool cuda_graph = true;
  double bucket_mib = 25.0;
  bool allreduce_bf16 = false;
  Parallel parallel = Parallel::Ddp;
  int replicas = 1;  // --parallel dp: the devices (GPUs, or CPU replicas) the one process drives
  bool deterministic = false;
  bool autotune = true;          // time cuDNN's candidate plans on first use (CUDA)
  bool fold_batch_norm = false;  // batch norms' passes into the convolutions around them (CUDA)
  // Batch norms' statistics alone into the convolutions before them (CUDA); unset: the model's default
  // (fold_bn_statistics_on()).
  std::optional<bool> fold_bn_statistics;
  std::optional<std::string> plan_cache;  // on-disk cuDNN plan cache; unset: default_plan_cache_dir(); "": none
  InputSource input = InputSource::Device;  // where the CUDA engine keeps the data and builds batches
  int workers = 0;                          // --input host: batch-building threads (0: the rank's cores)
  bool pin_memory = true;                   // --input host: page-locked batch buffers
  ImageDecoding decode = ImageDecoding::Cpu;  // image files: on the workers (cpu) or nvJPEG (gpu)
  int image_size = 224;                     // image files: the side of the square crops trained on
  int val_resize = 256;                     // image files: evaluation resizes the shorter side to this first
  BadImages bad_images = BadImages::Fail;   // image files: a file that fails to decode ends the job, or is skipped
  // Untimed steps before the training clock, the model restored after them; unset: the device's default
  // (untimed_init_on()).
  std::optional<bool> untimed_init;

  double target_accuracy = 0.0;  // stop once the test accuracy reaches it (0: off); in [0, 1]
  int patience = 0;              // evaluations in a row at or above the target that stop the run (0: 1)
  int stop_after_no_improvement = 0;  // stop after this many epochs without a better accuracy (0: off)
  int log_interval = 0;          // steps between progress lines (0: epoch lines only)
  int64_t sample_steps = 64;     // per-step phase times stored in /steps for the first N steps of an epoch
  double collective_timeout = 600;  // s a rank waits in one collective before it ends the job (0: forever)

  std::string out;               // HDF5 results path ("" writes none)
  std::string trace;             // folder for per-rank Chrome trace files ("" : none)
  double log_seconds = 10;       // most seconds between timed progress lines within an epoch (0: none)
  std::string csv;               // the command's tables as CSV ("" : none; metrics/table_export.h)
  std::string json;              // the command's tables as JSON Lines ("" : none)
  std::string mllog;             // MLPerf-style :::MLLOG lines ("" : none; train/reporting/mllog.h)
  int checkpoint_every = 0;      // epochs between checkpoints (0: only on a stop signal)
  std::string checkpoint;        // checkpoint path ("" : OUT.ckpt.h5, or scalebench.ckpt.h5 without --out)
  std::string resume;            // checkpoint to continue from
  bool resumable = true;         // false: a stop signal ends the run without a checkpoint (a `scale`
                                 // configuration cannot be resumed); not an option, not in to_json

  // Where checkpoints go.
  std::string checkpoint_path() const;
  // Whether the run takes the untimed initialisation: as set, else on for CUDA (plans, buffers, graph
  // capture make a first step slow) and off for the CPU (where it buys nothing: docs/benchmarks.md).
  bool untimed_init_on() const { return untimed_init.value_or(device == Device::Cuda); }
  // Whether the batch norms' statistics go into the convolutions' epilogues: as set, else on in fp16 and
  // NHWC for a model whose row says the fold pays there (ModelInfo::fp16_folds_bn_statistics), worked out
  // from the precision and layout the run ends with (a study's --sweep-precision sets each point's).
  bool fold_bn_statistics_on() const;
  std::string command_line;      // recorded, not hashed

  // Per-rank batch for a world of `ranks` (with --parallel dp, the one rank's batch over all its replicas);
  // throws UserError when a strong-scaling batch doesn't divide, or dp is asked of several ranks.
  int64_t per_rank_batch(int ranks) const;
  // validate(), to_json() and from_json() go through the option rows (train/train_options.h) and are
  // defined beside them (train/train_config_rows.cpp).
  // Checks values that need no files or ranks: each option's bounds, then the rules between options;
  // throws UserError naming the option.
  void validate() const;
  // The configuration as a flat JSON object, one member per recorded option (for the results file, the
  // cross-rank hash and checkpoints).
  std::string to_json() const;
  // The configuration recorded by to_json(); options it does not record keep their defaults. Throws
  // UserError naming `what` and the key for text that to_json() could not have written.
  static TrainConfig from_json(const std::string& text, const std::string& what);
};

const char* scaling_name(Scaling s);

}  // namespace sb

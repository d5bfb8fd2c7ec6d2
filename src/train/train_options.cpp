#include "train/train_options.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/error.h"
#include "core/json_text.h"
#include "models/registry.h"
#include "optim/option_checks.h"
#include "train/config_json.h"

namespace sb {

bool Bounds::contains(double v) const {
  if (std::isnan(v)) return false;
  return (lowest_open ? v > lowest : v >= lowest) && (highest_open ? v < highest : v <= highest);
}

std::string Bounds::rule() const {
  if (std::isinf(highest)) {
    if (lowest == 0) return lowest_open ? "must be positive" : "must not be negative";
    return (lowest_open ? "must be greater than " : "must be at least ") + format_option_value(lowest);
  }
  if (std::isinf(lowest)) return (highest_open ? "must be less than " : "must be at most ") + format_option_value(highest);
  return "must lie in " + std::string(lowest_open ? "(" : "[") + format_option_value(lowest) + ", " +
         format_option_value(highest) + (highest_open ? ")" : "]");
}

namespace {

const unsigned kRun = kTrain | kScale;

// ------------------------------------------------------------------------------------- accepted values

Bounds at_least(double lowest, const char* hint = "") { return {lowest, Bounds{}.highest, false, false, hint}; }
Bounds positive() { return {0, Bounds{}.highest, true, false, ""}; }
Bounds within(double lowest, double highest, bool highest_open, const char* hint = "") {
  return {lowest, highest, false, highest_open, hint};
}

[[noreturn]] void bad_text(const char* option, const std::string& text, const std::string& expected) {
  throw UserError(std::string("--") + option + " expects " + expected + ", got '" + text + "'");
}

void check_bounds(const Bounds& bounds, double value, const std::string& shown, const char* option) {
  if (bounds.contains(value)) return;
  throw UserError(std::string("--") + option + " " + bounds.rule() + " (got " + shown + ")" +
                  (*bounds.hint ? std::string("; ") + bounds.hint : ""));
}

// 17 significant digits, which read back as the same double, for the configuration JSON.
std::string json_number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", v);
  return text;
}
// The value as --help shows a default.
std::string shown_number(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

std::optional<double> read_double(const std::string& text) {
  double x = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), x);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return x;
}
double parse_double(const std::string& text, const char* option) {
  const std::optional<double> x = read_double(text);
  if (!x || !std::isfinite(*x)) bad_text(option, text, "a number");
  return *x;
}

// ------------------------------------------------------------------------------------- field kinds

// An integer field of type T (int, int64_t, uint64_t); values beyond int64_t are refused.
template <class T>
OptionField whole(T TrainConfig::*field, Bounds bounds) {
  constexpr int64_t largest = std::numeric_limits<T>::max() < static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
                                  ? static_cast<int64_t>(std::numeric_limits<T>::max())
                                  : std::numeric_limits<int64_t>::max();
  const auto check = [field, bounds](const TrainConfig& c, const char* option) {
    check_bounds(bounds, static_cast<double>(c.*field), std::to_string(c.*field), option);
  };
  OptionField f;
  f.parse = [field, bounds](TrainConfig& c, const std::string& text, const char* option) {
    int64_t x = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), x);
    const bool whole_text = end == text.data() + text.size();
    if (ec == std::errc::result_out_of_range && whole_text) bad_text(option, text, "an integer no larger than " + std::to_string(largest));
    if (ec != std::errc() || !whole_text) bad_text(option, text, "an integer");
    check_bounds(bounds, static_cast<double>(x), std::to_string(x), option);  // before a cast could wrap it
    if (x > largest) bad_text(option, text, "an integer no larger than " + std::to_string(largest));
    if (x < static_cast<int64_t>(std::numeric_limits<T>::lowest()))
      bad_text(option, text, "an integer no smaller than " + std::to_string(std::numeric_limits<T>::lowest()));
    c.*field = static_cast<T>(x);
  };
  f.show = [field](const TrainConfig& c) { return std::to_string(c.*field); };
  f.check = check;
  f.to_json = f.show;
  f.from_json = [field](TrainConfig& c, const std::string& json) {
    T x{};
    const auto [end, ec] = std::from_chars(json.data(), json.data() + json.size(), x);
    if (ec != std::errc() || end != json.data() + json.size()) return false;
    c.*field = x;
    return true;
  };
  f.bounds = bounds;
  return f;
}

OptionField number(double TrainConfig::*field, std::optional<Bounds> bounds = std::nullopt) {
  const auto check = [field, bounds](const TrainConfig& c, const char* option) {
    if (bounds) check_bounds(*bounds, c.*field, format_option_value(c.*field), option);
  };
  OptionField f;
  f.parse = [field, check](TrainConfig& c, const std::string& text, const char* option) {
    c.*field = parse_double(text, option);
    check(c, option);
  };
  f.show = [field](const TrainConfig& c) { return shown_number(c.*field); };
  f.check = check;
  f.to_json = [field](const TrainConfig& c) { return json_number(c.*field); };
  f.from_json = [field](TrainConfig& c, const std::string& json) {
    const std::optional<double> x = read_double(json);
    if (x) c.*field = *x;
    return x.has_value();
  };
  f.bounds = bounds;
  return f;
}

OptionField flag(bool TrainConfig::*field) {
  OptionField f;
  f.parse = [field](TrainConfig& c, const std::string& text, const char* option) {
    const std::optional<bool> value = on_off_value(text);
    if (!value) bad_text(option, text, "on or off");
    c.*field = *value;
  };
  f.show = [field](const TrainConfig& c) { return std::string(c.*field ? "on" : "off"); };
  f.check = [](const TrainConfig&, const char*) {};
  f.to_json = [field](const TrainConfig& c) { return std::string(c.*field ? "true" : "false"); };
  f.from_json = [field](TrainConfig& c, const std::string& json) {
    if (json != "true" && json != "false") return false;
    c.*field = json == "true";
    return true;
  };
  return f;
}

// A text field; --help shows `unset` for the empty text.
OptionField text(std::string TrainConfig::*field, const char* unset = "") {
  OptionField f;
  f.parse = [field](TrainConfig& c, const std::string& text, const char*) { c.*field = text; };
  f.show = [field, unset](const TrainConfig& c) { return (c.*field).empty() ? std::string(unset) : c.*field; };
  f.check = [](const TrainConfig&, const char*) {};
  f.to_json = [field](const TrainConfig& c) { return json_quote(c.*field); };
  f.from_json = [field](TrainConfig& c, const std::string& json) {
    const std::optional<std::string> value = json_string_value(json);
    if (value) c.*field = *value;
    return value.has_value();
  };
  return f;
}

// A named choice: an enum with a table of names (core/enum_names.h), parsed in any case.
template <class E>
OptionField choice(E TrainConfig::*field) {
  OptionField f;
  f.parse = [field](TrainConfig& c, const std::string& text, const char* option) {
    const std::optional<E> value = find_by_name<E>(text);
    if (!value) bad_text(option, text, "one of " + name_list<E>() + " (any case)");
    c.*field = *value;
  };
  f.show = [field](const TrainConfig& c) { return std::string(name_of(c.*field)); };
  f.check = [](const TrainConfig&, const char*) {};
  f.to_json = [field](const TrainConfig& c) { return json_quote(name_of(c.*field)); };
  f.from_json = [field](TrainConfig& c, const std::string& json) {
    const std::optional<std::string> name = json_string_value(json);
    const std::optional<E> value = name ? find_by_name<E>(*name) : std::nullopt;
    if (value) c.*field = *value;
    return value.has_value();
  };
  for (const EnumName<E>& row : enum_names(E{})) f.choices.emplace_back(row.name);
  return f;
}

// Unset: the optimizer's own default, which the JSON records resolved, so that a default and the same
// value given explicitly record (and resume) alike.
OptionField weight_decay() {
  const Bounds bounds = at_least(0);
  const auto check = [bounds](const TrainConfig& c, const char* option) {
    if (c.weight_decay) check_bounds(bounds, *c.weight_decay, format_option_value(*c.weight_decay), option);
  };
  OptionField f;
  f.parse = [check](TrainConfig& c, const std::string& text, const char* option) {
    c.weight_decay = parse_double(text, option);
    check(c, option);
  };
  f.show = [](const TrainConfig& c) {
    return c.weight_decay ? shown_number(*c.weight_decay) : "default: " + defaults_by_optimizer(default_weight_decay);
  };
  f.check = check;
  f.to_json = [](const TrainConfig& c) { return json_number(c.weight_decay.value_or(default_weight_decay(c.optimizer))); };
  f.from_json = [](TrainConfig& c, const std::string& json) {
    const std::optional<double> x = read_double(json);
    if (x) c.weight_decay = *x;
    return x.has_value();
  };
  f.bounds = bounds;
  return f;
}

// --plan-cache DIR: unset means the default folder, the empty text (--no-plan-cache) none. Not recorded:
// where a node keeps its cache says nothing about the run.
OptionField plan_cache_folder() {
  OptionField f;
  f.parse = [](TrainConfig& c, const std::string& text, const char*) { c.plan_cache = text; };
  f.show = [](const TrainConfig& c) {
    if (!c.plan_cache) return std::string("default: $XDG_CACHE_HOME/scalebench, else ~/.cache/scalebench");
    return c.plan_cache->empty() ? std::string("none") : *c.plan_cache;
  };
  f.check = [](const TrainConfig&, const char*) {};
  f.to_json = [](const TrainConfig& c) { return json_quote(c.plan_cache.value_or("")); };
  f.from_json = [](TrainConfig& c, const std::string& json) {
    const std::optional<std::string> text = json_string_value(json);
    if (text) c.plan_cache = *text;
    return text.has_value();
  };
  return f;
}

// A flag whose unset value is a default worked out from the rest of the configuration (`resolved`, a
// TrainConfig member), which the JSON records resolved; --help shows `default_text` while it is unset.
OptionField defaulted_flag(std::optional<bool> TrainConfig::*field, bool (TrainConfig::*resolved)() const,
                           const char* default_text) {
  OptionField f;
  f.parse = [field](TrainConfig& c, const std::string& text, const char* option) {
    const std::optional<bool> value = on_off_value(text);
    if (!value) bad_text(option, text, "on or off");
    c.*field = *value;
  };
  f.show = [field, default_text](const TrainConfig& c) {
    return c.*field ? std::string(*(c.*field) ? "on" : "off") : std::string(default_text);
  };
  f.check = [](const TrainConfig&, const char*) {};
  f.to_json = [resolved](const TrainConfig& c) { return std::string((c.*resolved)() ? "true" : "false"); };
  f.from_json = [field](TrainConfig& c, const std::string& json) {
    if (json != "true" && json != "false") return false;
    c.*field = json == "true";
    return true;
  };
  return f;
}

// `f` with another --help text for its value.
OptionField shown_as(OptionField f, std::function<std::string(const TrainConfig&)> show) {
  f.show = std::move(show);
  return f;
}

std::vector<TrainOption> make_rows() {
  using C = TrainConfig;
  const ResumeRule same = ResumeRule::Same, free = ResumeRule::Free;
  return {
      {"model", "NAME", "the model: " + model_names() + " (listed below, each with the default recipe it also sets)",
       kRun, "model", same, text(&C::model)},
      {"data", "SPEC", "the data set, in one of the forms listed below", kRun, "data", ResumeRule::SameData, text(&C::data)},
      {"epochs", "N", "training epochs", kRun, "epochs", ResumeRule::NotFewer, whole(&C::epochs, at_least(1))},
      {"batch-size", "B", "per-rank batch (--scaling weak) or global batch (--scaling strong); of each micro-batch with --accumulate-steps", kRun, "batch_size", same,
       whole(&C::batch_size, at_least(1))},
      {"scaling", "MODE", "weak: fixed per-rank batch; strong: fixed global batch split across ranks", kRun, "scaling", same,
       choice(&C::scaling)},
      // Older configurations lack it: they stepped after every batch.
      {"accumulate-steps", "K",
       "micro-batches of --batch-size whose gradients add up to one optimizer step, with one all-reduce per step; "
       "schedules count optimizer steps (docs/optimizers.md)",
       kRun, "accumulate_steps", same, whole(&C::accumulate_steps, at_least(1, "1 takes an optimizer step after every batch"))},
      {"eval-batch-size", "B", "per-rank batch for evaluation; larger is faster while the memory lasts and changes no result", kRun, "eval_batch_size", same,
       whole(&C::eval_batch_size, at_least(1))},
      {"train-limit", "N", "use the first N training samples, for a quick trial (0: all)", kRun, "train_limit", same,
       whole(&C::train_limit, at_least(0, "0 uses every sample"))},
      {"test-limit", "N", "use the first N test samples, for a quick trial (0: all)", kRun, "test_limit", same,
       whole(&C::test_limit, at_least(0, "0 uses every sample"))},
      {"drop-last", "", "drop the last incomplete batch of each epoch (PyTorch's drop_last), so that every step has the same batch", kRun, "drop_last", same, flag(&C::drop_last)},
      {"augment", "", "random crop (padding 4) and horizontal flip, for CIFAR-style images (not for digits)", kRun, "augment", same, flag(&C::augment)},
      {"dropout", "", "dropout layers active in training; --no-dropout makes them the identity, to compare with a run without them", kRun, "dropout", same,
       flag(&C::dropout)},
      {"zero-init-residual", "",
       "start each residual block as its shortcut: the last BN weight of every residual branch is 0 (torchvision's "
       "zero_init_residual), for the residual models (resnet*, wrn); set it to follow a recipe that does, such as "
       "large-batch ImageNet training (Goyal et al.); off matches torchvision's default",
       kRun, "zero_init_residual", same, flag(&C::zero_init_residual)},
      {"optimizer", "NAME", optimizer_name_list() + " (any case)", kRun, "optimizer", same, choice(&C::optimizer)},
      {"lr", "X", "learning rate", kRun, "lr", same, number(&C::lr, positive())},
      {"momentum", "X", "SGD momentum", kRun, "momentum", same, number(&C::momentum, within(0, 1, false))},
      {"dampening", "X", "SGD dampening", kRun, "dampening", same, number(&C::dampening)},
      {"nesterov", "", "SGD with Nesterov momentum", kRun, "nesterov", same, flag(&C::nesterov)},
      {"weight-decay", "X", "L2 weight decay (decoupled for adamw); default by optimizer", kRun, "weight_decay", same,
       weight_decay()},
      {"rho", "X", "Adadelta rho", kRun, "rho", same, number(&C::rho)},
      {"eps", "X", "epsilon of adadelta, adam and adamw (negative: the optimizer's default)", kRun, "eps", same,
       shown_as(number(&C::eps),
                [](const C& c) { return c.eps >= 0 ? shown_number(c.eps) : "default: " + defaults_by_optimizer(default_eps, has_eps); })},
      {"beta1", "X", "Adam and AdamW: decay of the gradient's running average, in [0, 1)", kRun, "beta1", same,
       number(&C::beta1, within(0, 1, true, "Adam's default is 0.9"))},
      {"beta2", "X", "Adam and AdamW: decay of the squared gradient's running average, in [0, 1)", kRun, "beta2", same,
       number(&C::beta2, within(0, 1, true, "Adam's default is 0.999"))},
      {"scheduler", "NAME", "none, step (StepLR per epoch), cosine (per step, with --lr-warmup-epochs)", kRun, "scheduler", same,
       choice(&C::scheduler)},
      {"step-size", "N", "StepLR step size in epochs", kRun, "step_size", same, whole(&C::step_size, at_least(1))},
      {"gamma", "X", "StepLR decay factor", kRun, "gamma", same, number(&C::gamma, positive())},
      // Older configurations recorded it as "warmup_epochs".
      {"lr-warmup-epochs", "X", "linear LR warm-up length in epochs (cosine)", kRun, "lr_warmup_epochs", same,
       number(&C::warmup_epochs, at_least(0)), false, "warmup_epochs"},
      {"min-lr", "X", "final LR of the cosine schedule", kRun, "min_lr", same, number(&C::min_lr)},
      {"scale-lr", "", "multiply the LR by the number of ranks (linear scaling rule), for weak scaling, where the global batch grows "
       "with the ranks", kRun, "scale_lr", same, flag(&C::scale_lr)},
      {"seed", "N", "seed of the initialisation, shuffling, dropout and augmentation", kRun, "seed", same,
       whole(&C::seed, at_least(0))},
      {"device", "DEV", "cpu, cuda or auto (cuda when the CUDA backend is built and every rank sees a GPU, else cpu)", kRun | kComm, "device", same, choice(&C::device)},
      {"precision", "P", "fp32, tf32, fp16 (dynamic loss scaling) or bf16 (CUDA): the 16-bit ones and tf32 run on tensor cores; fp32 "
       "for reference numerics", kRun, "precision", same,
       choice(&C::precision)},
      {"layout", "L", "nhwc or nchw activations (CUDA): nhwc is the tensor cores' layout (PyTorch's channels_last); nchw as "
       "PyTorch's default memory format", kRun, "layout", same, choice(&C::layout)},
      {"cuda-graph", "", "capture the training step as a CUDA graph (CUDA); off launches every kernel from the host, to profile or "
       "debug the step kernel by kernel", kRun, "cuda_graph", same, flag(&C::cuda_graph)},
      {"bucket-mib", "X", "gradient all-reduce bucket size in MiB (CUDA; DDP's bucket_cap_mb): smaller buckets start their "
       "all-reduces earlier in backward, larger ones make fewer calls", kRun, "bucket_mib", same,
       number(&C::bucket_mib, positive())},
      {"allreduce-bf16", "", "all-reduce gradients in bf16 (CUDA; DDP's bf16_compress_hook): half the bytes, for links that bandwidth "
       "limits", kRun, "allreduce_bf16", same, flag(&C::allreduce_bf16)},
      {"parallel", "MODE",
       "ddp: one rank per GPU, gradients all-reduced (DistributedDataParallel); dp: one rank drives --replicas "
       "devices, broadcasting the weights, scattering the batch, gathering the outputs and reducing the gradients to "
       "the first every step (nn.DataParallel; --batch-size per replica under weak scaling; docs/data_parallel.md)",
       kTrain, "parallel", same, choice(&C::parallel)},
      {"replicas", "N", "--parallel dp: the GPUs (--device cuda, the first N visible) or CPU replicas the one rank drives",
       kTrain, "replicas", same, whole(&C::replicas, at_least(1))},
      {"deterministic", "", "exclude non-deterministic cuDNN engines (CUDA), for runs that repeat bit for bit, at some speed", kRun, "deterministic", same,
       flag(&C::deterministic)},
      {"autotune", "",
       "time cuDNN's candidate plans and cuBLASLt's candidate algorithms on first use and keep the fastest; off "
       "takes the heuristics' first that runs, like cudnn.benchmark = False (CUDA)",
       kRun, "autotune", free, flag(&C::autotune)},
      {"fold-batch-norm", "",
       "fold each batch norm of a ResNet block into the convolutions around it (CUDA, NHWC): its statistics in the "
       "producing convolution's epilogue, its apply in the consuming one's prologue, its backward reduction in that "
       "one's dgrad, wherever cuDNN runs those graphs; the log's fusion line counts them (docs/cudnn.md). Slower than "
       "the separate passes on an H200 (docs/decisions.md)",
       kRun, "fold_batch_norm", free, flag(&C::fold_batch_norm)},
      {"fold-bn-statistics", "",
       "the batch norms' statistics alone into the epilogue of the convolutions before them (all but the stem), "
       "wherever cuDNN runs that graph (CUDA, NHWC): no pass reads those convolutions' outputs for the sums. Unless "
       "given, on for the models whose default recipe below names it, in fp16 and NHWC, where it is faster; slower "
       "in bf16 and for wrn (docs/decisions.md); the log's fusion line counts them",
       kRun, "fold_bn_statistics", free,
       defaulted_flag(&C::fold_bn_statistics, &C::fold_bn_statistics_on, "default: on for those models in fp16 and nhwc")},
      {"plan-cache", "DIR", "keep cuDNN's plan choices, the decoded data sets and the GPU's peak GEMM rate across runs in DIR; "
       "--no-plan-cache: none, to time a cold start (docs/cudnn.md, docs/benchmarks.md)",
       kRun, nullptr, free, plan_cache_folder(), true},
      {"input", "WHERE",
       "device: the data set resident on the GPU, batches built by a kernel; host: the data set in host memory, "
       "batches built by --workers threads and uploaded while the previous step trains, as a DataLoader feeds "
       "PyTorch (CUDA; the same batches either way; on --device cpu both build on the host; image files always "
       "take the host's path)",
       kRun, "input", free, choice(&C::input)},
      {"workers", "N", "--input host and image files: threads building (with image files: decoding) batches per rank (0: the cores the launcher gives each rank; with --decode gpu at most 4)", kRun,
       "workers", free,
       whole(&C::workers, within(0, 1024, false, "0 takes the cores the launcher gives each rank"))},
      {"pin-memory", "", "--input host: page-locked batch buffers, for asynchronous uploads; off only where page-locked memory is short", kRun, "pin_memory", free,
       flag(&C::pin_memory)},
      {"decode", "WHERE",
       "image files (--data imagefolder:, tars:): cpu decodes with libjpeg-turbo and libpng in the --workers threads of "
       "each rank; gpu has each worker decode its files with nvJPEG on the GPU (its JPEG engines where it has them), for nodes with fewer "
       "cores per GPU than the model needs (scalebench io measures both)",
       kRun, "decode", same, choice(&C::decode)},
      {"image-size", "N", "image files: the side of the square crops the model trains on (RandomResizedCrop's size); "
       "unless given, the model's input side: 28 for mnist-cnn and mlp, 32 for wrn and the CIFAR nets, 224 for the "
       "ResNets", kRun, "image_size", same,
       shown_as(whole(&C::image_size, within(8, 4096, false)), [](const C& c) {
         return c.image_size == C{}.image_size ? std::string("default: the model's input side") : std::to_string(c.image_size);
       })},
      {"val-resize", "N", "image files: evaluation resizes each image's shorter side to N, then takes the centre "
       "--image-size crop; unless given, 256/224 of --image-size rounded down (torchvision's Resize(256) + "
       "CenterCrop(224); 36 for 32)", kRun, "val_resize", same,
       shown_as(whole(&C::val_resize, within(8, 8192, false)), [](const C& c) {
         return c.val_resize == C{}.val_resize ? std::string("default: 256/224 of --image-size") : std::to_string(c.val_resize);
       })},
      {"bad-images", "WHAT", "image files: fail ends the job at the first file that can't be read or decoded, naming it; "
       "skip trains on the next image of the listing (or shards) that decodes in its place, counts it in the results "
       "and names it after the epoch", kRun, "bad_images", same,
       choice(&C::bad_images)},
      // Older configurations recorded it as "warm_up" (the option was --warm-up).
      {"untimed-init", "",
       "before the training clock starts, evaluate one batch and run the steps that build the plans, grow the buffers "
       "and capture the CUDA graph, then restore the model: the same training, a steady first epoch; off to time "
       "the first epoch cold; the default follows the device, as on the CPU it buys nothing (docs/benchmarks.md)",
       kRun, "untimed_init", free,
       defaulted_flag(&C::untimed_init, &C::untimed_init_on, "default: on for cuda, off for cpu"), false, "warm_up"},
      {"target-accuracy", "X",
       "stop once the test accuracy is at or above X (a fraction, e.g. 0.9; 0: off) for --patience evaluations in a row",
       kRun, "target_accuracy", same, number(&C::target_accuracy, within(0, 1, false, "a fraction, e.g. 0.9 for 90%"))},
      {"patience", "N", "with --target-accuracy: the evaluations in a row at or above the target that stop the run (0: 1)",
       kRun, "target_patience", same, whole(&C::patience, at_least(0))},
      // Older configurations recorded this rule as "patience".
      {"stop-after-no-improvement", "N", "stop after N epochs without a better test accuracy (0: off)", kRun,
       "stop_after_no_improvement", same, whole(&C::stop_after_no_improvement, at_least(0)), false, "patience"},
      {"log-interval", "N", "print a progress line every N steps (0: epoch lines only)", kRun, "log_interval", free,
       whole(&C::log_interval, at_least(0))},
      {"log-seconds", "S", "print a progress line at most every S seconds within an epoch (0: off)", kRun, "log_seconds",
       free, number(&C::log_seconds, at_least(0, "0 turns the timed progress lines off"))},
      // The tables and logs in other tools' formats: not recorded, as where they go says nothing about the run.
      {"csv", "FILE", "also write the command's tables as CSV: the first to FILE, a further one to FILE-<table>.csv", kRun | kComm,
       nullptr, free, text(&C::csv, "none")},
      {"json", "FILE", "also write the command's tables as JSON Lines, one object per row", kRun | kComm, nullptr, free,
       text(&C::json, "none")},
      {"mllog", "FILE", "write MLPerf Training's :::MLLOG lines to FILE (rank 0)", kTrain, nullptr, free, text(&C::mllog, "none")},
      {"sample-steps", "N", "per-step phase times and the ranks' arrival at the gradient all-reduce (the straggler, the step split) kept for the "
       "first N steps of each epoch: more for finer step statistics, 0 for smaller results files", kRun, "sample_steps", free,
       whole(&C::sample_steps, at_least(0))},
      {"collective-timeout", "S",
       "seconds a rank waits in one collective (MPI, or an NCCL operation) before it ends the job naming the ranks "
       "that did not arrive (0: wait forever)",
       kRun | kComm, "collective_timeout", free, number(&C::collective_timeout, at_least(0, "0 waits forever"))},
      {"out", "FILE", "HDF5 results file (written by rank 0 after every epoch); a FILE that exists is refused before any "
       "work, never replaced (train --resume continues its own run's): to replace it, remove it first", kRun | kComm, "out", free,
       text(&C::out, "none")},
      {"trace", "DIR", "write a Chrome-trace timeline per rank (DIR/trace-rank<R>.json; open in ui.perfetto.dev)", kRun,
       nullptr, free, text(&C::trace, "none")},
      {"checkpoint-every", "N", "write a checkpoint every N epochs (0: only when a stop signal arrives)", kTrain,
       "checkpoint_every", free, whole(&C::checkpoint_every, at_least(0))},
      {"checkpoint", "FILE", "checkpoint path; a FILE that exists is refused unless --resume continues it", kTrain, nullptr, free,
       shown_as(text(&C::checkpoint),
                [](const C& c) { return c.checkpoint.empty() ? std::string("default: OUT.ckpt.h5, or scalebench.ckpt.h5 without --out") : c.checkpoint; })},
      {"resume", "FILE", "continue from a checkpoint (same model, data and options)", kTrain, nullptr, free,
       text(&C::resume, "none")},
  };
}

}  // namespace

std::span<const TrainOption> train_options() {
  static const std::vector<TrainOption> rows = make_rows();
  return rows;
}

bool is_retired_json_key(std::string_view key) {
  // The CUDA paths' A/B switches, each now its settled default (a test chooses a path's twin in code,
  // docs/kernels.md); all were free across a resume.
  static constexpr std::string_view kRetired[] = {"batchnorm_path", "fused_bn", "fused_residual_grad", "parallel_wgrad",
                                                  "optimizer_overlap", "symmetric_memory"};
  for (std::string_view retired : kRetired)
    if (key == retired) return true;
  return false;
}

const TrainOption* train_option_for_key(std::string_view key) {
  for (const TrainOption& row : train_options())
    if ((row.json_key && key == row.json_key) || (row.old_json_key && key == row.old_json_key)) return &row;
  return nullptr;
}

const TrainOption* train_option_named(std::string_view name) {
  for (const TrainOption& row : train_options())
    if (name == row.name) return &row;
  return nullptr;
}

}  // namespace sb

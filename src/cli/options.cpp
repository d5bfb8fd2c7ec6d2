#include "cli/options.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <sstream>

#include "core/error.h"
#include "optim/optimizer_kind.h"

namespace sb {
namespace {

[[noreturn]] void bad_value(const std::string& option, const std::string& value, const std::string& expected) {
  throw UserError("--" + option + " expects " + expected + ", got '" + value + "'");
}

int64_t to_int(const std::string& option, const std::string& v) {
  int64_t x = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (ec != std::errc() || end != v.data() + v.size()) bad_value(option, v, "an integer");
  return x;
}
// An integer option that must fit its field: a value outside [lowest, highest] is refused, never wrapped.
int64_t to_int_in(const std::string& option, const std::string& v, int64_t lowest, int64_t highest) {
  const int64_t x = to_int(option, v);
  if (x < lowest || x > highest)
    bad_value(option, v, "an integer from " + std::to_string(lowest) + " to " + std::to_string(highest));
  return x;
}
constexpr int64_t kIntMax = std::numeric_limits<int>::max();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

double to_double(const std::string& option, const std::string& v) {
  try {
    size_t used = 0;
    const double x = std::stod(v, &used);
    if (used != v.size() || !std::isfinite(x)) bad_value(option, v, "a number");
    return x;
  } catch (const std::logic_error&) {
    bad_value(option, v, "a number");
  }
}
bool to_bool(const std::string& option, const std::string& v) {
  if (v == "on" || v == "true" || v == "1" || v == "yes") return true;
  if (v == "off" || v == "false" || v == "0" || v == "no") return false;
  bad_value(option, v, "on or off");
}
int64_t to_bytes(const std::string& option, const std::string& v) {
  // 1024, 64K, 32M, 1G (binary units)
  if (v.empty()) bad_value(option, v, "a size such as 1024, 64K, 32M or 1G");
  int64_t scale = 1;
  std::string digits = v;
  const char unit = static_cast<char>(std::toupper(static_cast<unsigned char>(v.back())));
  if (unit == 'K' || unit == 'M' || unit == 'G') {
    scale = unit == 'K' ? 1024 : unit == 'M' ? 1024 * 1024 : 1024 * 1024 * 1024;
    digits.pop_back();
  }
  int64_t x = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), x);
  if (ec != std::errc() || end != digits.data() + digits.size() || x <= 0) bad_value(option, v, "a size such as 1024, 64K, 32M or 1G");
  return x * scale;
}
std::vector<std::string> split_list(const std::string& v) {
  std::vector<std::string> out;
  std::stringstream ss(v);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(item);
  return out;
}
std::string show(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}
std::string on_off(bool b) { return b ? "on" : "off"; }

#define TRAIN_FIELD(field) [](const CliConfig& c) { return show(c.train.field); }

}  // namespace

const std::vector<OptionSpec>& option_table() {
  const unsigned run = kTrain | kScale;
  static const std::string optimizer_help = optimizer_name_list() + " (any case)";
  static const std::vector<OptionSpec> table = {
      {"model", "NAME", "model: mnist-cnn, wrn, cifar-cnn, mlp, resnet18", run,
       [](CliConfig& c, const std::string& v) { c.train.model = v; }, [](const CliConfig& c) { return c.train.model; }},
      {"data", "SPEC", "fashion-mnist[:DIR], mnist:DIR, cifar10:DIR, cifar100:DIR, synthetic:CxHxW:CLASSES[:NTRAIN[:NTEST]]", run,
       [](CliConfig& c, const std::string& v) { c.train.data = v; }, [](const CliConfig& c) { return c.train.data; }},
      {"epochs", "N", "training epochs", run,
       [](CliConfig& c, const std::string& v) { c.train.epochs = static_cast<int>(to_int_in("epochs", v, 1, kIntMax)); }, TRAIN_FIELD(epochs)},
      {"batch-size", "B", "per-rank batch (--scaling weak) or global batch (--scaling strong)", run,
       [](CliConfig& c, const std::string& v) { c.train.batch_size = to_int_in("batch-size", v, 1, kInt64Max); }, TRAIN_FIELD(batch_size)},
      {"scaling", "MODE", "weak: fixed per-rank batch; strong: fixed global batch split across ranks", run,
       [](CliConfig& c, const std::string& v) {
         if (v == "weak") c.train.scaling = Scaling::Weak;
         else if (v == "strong") c.train.scaling = Scaling::Strong;
         else bad_value("scaling", v, "weak or strong");
       },
       [](const CliConfig& c) { return std::string(scaling_name(c.train.scaling)); }},
      {"eval-batch-size", "B", "per-rank batch for evaluation", run,
       [](CliConfig& c, const std::string& v) { c.train.eval_batch_size = to_int_in("eval-batch-size", v, 1, kInt64Max); }, TRAIN_FIELD(eval_batch_size)},
      {"train-limit", "N", "use the first N training samples (0: all)", run,
       [](CliConfig& c, const std::string& v) { c.train.train_limit = to_int_in("train-limit", v, 0, kInt64Max); }, TRAIN_FIELD(train_limit)},
      {"test-limit", "N", "use the first N test samples (0: all)", run,
       [](CliConfig& c, const std::string& v) { c.train.test_limit = to_int_in("test-limit", v, 0, kInt64Max); }, TRAIN_FIELD(test_limit)},
      {"drop-last", "", "drop the last incomplete batch of each epoch", run,
       [](CliConfig& c, const std::string& v) { c.train.drop_last = to_bool("drop-last", v); },
       [](const CliConfig& c) { return on_off(c.train.drop_last); }},
      {"augment", "", "random crop (padding 4) and horizontal flip (CIFAR)", run,
       [](CliConfig& c, const std::string& v) { c.train.augment = to_bool("augment", v); },
       [](const CliConfig& c) { return on_off(c.train.augment); }},
      {"dropout", "", "dropout layers active in training (--no-dropout makes them the identity)", run,
       [](CliConfig& c, const std::string& v) { c.train.dropout = to_bool("dropout", v); },
       [](const CliConfig& c) { return on_off(c.train.dropout); }},
      {"optimizer", "NAME", optimizer_help.c_str(), run,
       [](CliConfig& c, const std::string& v) {
         const auto kind = find_optimizer_kind(v);
         if (!kind) bad_value("optimizer", v, "one of " + optimizer_name_list() + " (any case)");
         c.train.optimizer = optimizer_name(*kind);  // one spelling for the results file, hash and resume
       },
       [](const CliConfig& c) { return c.train.optimizer; }},
      {"lr", "X", "learning rate", run, [](CliConfig& c, const std::string& v) { c.train.lr = to_double("lr", v); }, TRAIN_FIELD(lr)},
      {"momentum", "X", "SGD momentum", run,
       [](CliConfig& c, const std::string& v) { c.train.momentum = to_double("momentum", v); }, TRAIN_FIELD(momentum)},
      {"dampening", "X", "SGD dampening", run,
       [](CliConfig& c, const std::string& v) { c.train.dampening = to_double("dampening", v); }, TRAIN_FIELD(dampening)},
      {"nesterov", "", "SGD with Nesterov momentum", run,
       [](CliConfig& c, const std::string& v) { c.train.nesterov = to_bool("nesterov", v); },
       [](const CliConfig& c) { return on_off(c.train.nesterov); }},
      {"weight-decay", "X", "L2 weight decay (decoupled for adamw); default by optimizer", run,
       [](CliConfig& c, const std::string& v) { c.train.weight_decay = to_double("weight-decay", v); },
       [](const CliConfig& c) {
         return c.train.weight_decay ? show(*c.train.weight_decay) : "default: " + defaults_by_optimizer(default_weight_decay);
       }},
      {"rho", "X", "Adadelta rho", run, [](CliConfig& c, const std::string& v) { c.train.rho = to_double("rho", v); }, TRAIN_FIELD(rho)},
      {"eps", "X", "epsilon of adadelta, adam and adamw (negative: the optimizer's default)", run,
       [](CliConfig& c, const std::string& v) { c.train.eps = to_double("eps", v); },
       [](const CliConfig& c) {
         return c.train.eps >= 0 ? show(c.train.eps) : "default: " + defaults_by_optimizer(default_eps, has_eps);
       }},
      {"beta1", "X", "Adam and AdamW: decay of the gradient's running average, in [0, 1)", run,
       [](CliConfig& c, const std::string& v) { c.train.beta1 = to_double("beta1", v); }, TRAIN_FIELD(beta1)},
      {"beta2", "X", "Adam and AdamW: decay of the squared gradient's running average, in [0, 1)", run,
       [](CliConfig& c, const std::string& v) { c.train.beta2 = to_double("beta2", v); }, TRAIN_FIELD(beta2)},
      {"scheduler", "NAME", "none, step (StepLR per epoch), cosine (per step, with --lr-warmup-epochs)", run,
       [](CliConfig& c, const std::string& v) { c.train.scheduler = v; }, [](const CliConfig& c) { return c.train.scheduler; }},
      {"step-size", "N", "StepLR step size in epochs", run,
       [](CliConfig& c, const std::string& v) { c.train.step_size = static_cast<int>(to_int_in("step-size", v, 1, kIntMax)); }, TRAIN_FIELD(step_size)},
      {"gamma", "X", "StepLR decay factor", run,
       [](CliConfig& c, const std::string& v) { c.train.gamma = to_double("gamma", v); }, TRAIN_FIELD(gamma)},
      {"lr-warmup-epochs", "X", "linear LR warm-up length in epochs (cosine)", run,
       [](CliConfig& c, const std::string& v) { c.train.warmup_epochs = to_double("lr-warmup-epochs", v); }, TRAIN_FIELD(warmup_epochs)},
      {"min-lr", "X", "final LR of the cosine schedule", run,
       [](CliConfig& c, const std::string& v) { c.train.min_lr = to_double("min-lr", v); }, TRAIN_FIELD(min_lr)},
      {"scale-lr", "", "multiply the LR by the number of ranks (linear scaling rule)", run,
       [](CliConfig& c, const std::string& v) { c.train.scale_lr = to_bool("scale-lr", v); },
       [](const CliConfig& c) { return on_off(c.train.scale_lr); }},
      {"seed", "N", "seed of the initialisation, shuffling, dropout and augmentation", run,
       [](CliConfig& c, const std::string& v) { c.train.seed = static_cast<uint64_t>(to_int_in("seed", v, 0, kInt64Max)); }, TRAIN_FIELD(seed)},
      {"device", "DEV", "cpu or cuda", run | kComm,
       [](CliConfig& c, const std::string& v) { c.train.device = v; }, [](const CliConfig& c) { return c.train.device; }},
      {"precision", "P", "fp32, tf32, fp16 (dynamic loss scaling) or bf16 (CUDA)", run,
       [](CliConfig& c, const std::string& v) { c.train.precision = v; }, [](const CliConfig& c) { return c.train.precision; }},
      {"layout", "L", "nhwc or nchw activations (CUDA)", run,
       [](CliConfig& c, const std::string& v) { c.train.layout = v; }, [](const CliConfig& c) { return c.train.layout; }},
      {"cuda-graph", "", "capture the training step as a CUDA graph (CUDA)", run,
       [](CliConfig& c, const std::string& v) { c.train.cuda_graph = to_bool("cuda-graph", v); },
       [](const CliConfig& c) { return on_off(c.train.cuda_graph); }},
      {"bucket-mib", "X", "gradient all-reduce bucket size in MiB (CUDA)", run,
       [](CliConfig& c, const std::string& v) { c.train.bucket_mib = to_double("bucket-mib", v); }, TRAIN_FIELD(bucket_mib)},
      {"allreduce-bf16", "", "all-reduce gradients in bf16 (CUDA)", run,
       [](CliConfig& c, const std::string& v) { c.train.allreduce_bf16 = to_bool("allreduce-bf16", v); },
       [](const CliConfig& c) { return on_off(c.train.allreduce_bf16); }},
      {"deterministic", "", "exclude non-deterministic cuDNN engines (CUDA)", run,
       [](CliConfig& c, const std::string& v) { c.train.deterministic = to_bool("deterministic", v); },
       [](const CliConfig& c) { return on_off(c.train.deterministic); }},
      {"target-accuracy", "X", "stop once the test accuracy reaches X (a fraction, e.g. 0.9; 0: off)", run,
       [](CliConfig& c, const std::string& v) { c.train.target_accuracy = to_double("target-accuracy", v); }, TRAIN_FIELD(target_accuracy)},
      {"patience", "N", "stop after N epochs without a better test accuracy (0: off)", run,
       [](CliConfig& c, const std::string& v) { c.train.patience = static_cast<int>(to_int_in("patience", v, 0, kIntMax)); }, TRAIN_FIELD(patience)},
      {"log-interval", "N", "print a progress line every N steps (0: epoch lines only)", run,
       [](CliConfig& c, const std::string& v) { c.train.log_interval = static_cast<int>(to_int_in("log-interval", v, 0, kIntMax)); }, TRAIN_FIELD(log_interval)},
      {"sample-steps", "N", "per-step phase times kept for the first N steps of each epoch", run,
       [](CliConfig& c, const std::string& v) { c.train.sample_steps = to_int_in("sample-steps", v, 0, kInt64Max); }, TRAIN_FIELD(sample_steps)},
      {"collective-timeout", "S",
       "seconds a rank waits in one collective (MPI, or an NCCL operation) before it ends the job naming the ranks "
       "that did not arrive (0: wait forever)",
       run | kComm,
       [](CliConfig& c, const std::string& v) { c.train.collective_timeout = to_double("collective-timeout", v); },
       TRAIN_FIELD(collective_timeout)},
      {"out", "FILE", "HDF5 results file (written by rank 0 after every epoch)", run | kComm,
       [](CliConfig& c, const std::string& v) { c.train.out = v; }, [](const CliConfig& c) { return c.train.out.empty() ? std::string("none") : c.train.out; }},
      {"trace", "DIR", "write a Chrome-trace timeline per rank (DIR/trace-rank<R>.json; open in ui.perfetto.dev)", run,
       [](CliConfig& c, const std::string& v) { c.train.trace = v; },
       [](const CliConfig& c) { return c.train.trace.empty() ? std::string("none") : c.train.trace; }},
      {"checkpoint-every", "N", "write a checkpoint every N epochs (0: only when a stop signal arrives)", kTrain,
       [](CliConfig& c, const std::string& v) { c.train.checkpoint_every = static_cast<int>(to_int_in("checkpoint-every", v, 0, kIntMax)); },
       TRAIN_FIELD(checkpoint_every)},
      {"checkpoint", "FILE", "checkpoint path (default: OUT.ckpt.h5)", kTrain,
       [](CliConfig& c, const std::string& v) { c.train.checkpoint = v; },
       [](const CliConfig& c) { return c.train.checkpoint_path(); }},
      {"resume", "FILE", "continue from a checkpoint (same model, data and options)", kTrain,
       [](CliConfig& c, const std::string& v) { c.train.resume = v; }, [](const CliConfig&) { return std::string("none"); }},
      {"gpus", "LIST", "GPU counts of the study, e.g. 1,2,4,8 (default: powers of two up to the world size)", kScale,
       [](CliConfig& c, const std::string& v) {
         c.scale.gpus.clear();
         for (const auto& item : split_list(v)) {
           const int64_t n = to_int("gpus", item);
           if (n < 1) bad_value("gpus", v, "a comma-separated list of positive counts");
           c.scale.gpus.push_back(static_cast<int>(n));
         }
         if (c.scale.gpus.empty()) bad_value("gpus", v, "a comma-separated list of positive counts");
       },
       [](const CliConfig&) { return std::string("1,2,4,...,world size"); }},
      {"warmup-epochs", "N", "epochs per configuration excluded from the study's figures", kScale,
       [](CliConfig& c, const std::string& v) { c.scale.warmup_epochs = static_cast<int>(to_int_in("warmup-epochs", v, 0, kIntMax)); },
       [](const CliConfig& c) { return std::to_string(c.scale.warmup_epochs); }},
      {"min-bytes", "SIZE", "smallest all-reduce size (e.g. 1K)", kComm,
       [](CliConfig& c, const std::string& v) { c.comm.min_bytes = to_bytes("min-bytes", v); },
       [](const CliConfig& c) { return std::to_string(c.comm.min_bytes); }},
      {"max-bytes", "SIZE", "largest all-reduce size (e.g. 256M)", kComm,
       [](CliConfig& c, const std::string& v) { c.comm.max_bytes = to_bytes("max-bytes", v); },
       [](const CliConfig& c) { return std::to_string(c.comm.max_bytes); }},
      {"dtypes", "LIST", "element types of the sweep: fp32,bf16,fp16", kComm,
       [](CliConfig& c, const std::string& v) { c.comm.dtypes = split_list(v); },
       [](const CliConfig&) { return std::string("fp32,bf16"); }},
      {"iterations", "N", "timed all-reduces per size", kComm,
       [](CliConfig& c, const std::string& v) { c.comm.iterations = static_cast<int>(to_int_in("iterations", v, 1, kIntMax)); },
       [](const CliConfig& c) { return std::to_string(c.comm.iterations); }},
      {"comm-model", "NAME", "also time an all-reduce of this model's gradient size", kComm,
       [](CliConfig& c, const std::string& v) { c.train.model = v; }, [](const CliConfig& c) { return c.train.model; }},
  };
  return table;
}

CliConfig parse_options(const std::string& command, unsigned mask, const std::vector<std::string>& args) {
  CliConfig config;
  const auto& table = option_table();
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--help" || arg == "-h") {
      config.help = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0) {
      throw UserError("unexpected argument '" + arg + "' for 'scalebench " + command + "'; options start with --; see scalebench " +
                      command + " --help");
    }
    std::string name = arg.substr(2), value;
    bool has_value = false;
    if (const size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    bool negated = false;
    const OptionSpec* spec = nullptr;
    for (const auto& o : table) {
      if (!(o.commands & mask)) continue;
      if (name == o.name) spec = &o;
      else if (o.value_name[0] == '\0' && name == std::string("no-") + o.name) spec = &o, negated = true;
    }
    if (!spec) {
      throw UserError("unknown option '--" + name + "' for 'scalebench " + command + "'; see scalebench " + command + " --help");
    }
    if (spec->value_name[0] == '\0') {  // a flag
      if (negated && has_value) throw UserError("--no-" + name.substr(3) + " takes no value");
      spec->set(config, negated ? "off" : (has_value ? value : "on"));
      continue;
    }
    if (!has_value) {
      if (i + 1 >= args.size()) throw UserError("--" + name + " needs a value (" + spec->value_name + ")");
      value = args[++i];
    }
    spec->set(config, value);
  }
  return config;
}

std::string help_text(const std::string& command, unsigned mask, const std::string& summary) {
  CliConfig defaults;
  std::ostringstream out;
  out << "usage: mpirun -np N scalebench " << command << " [options]\n\n" << summary << "\n\noptions:\n";
  for (const auto& o : option_table()) {
    if (!(o.commands & mask)) continue;
    std::string left = std::string("  --") + o.name;
    if (o.value_name[0]) left += std::string(" ") + o.value_name;
    else left += std::string(", --no-") + o.name;
    out << left;
    const size_t column = 30;
    out << (left.size() < column ? std::string(column - left.size(), ' ') : "\n" + std::string(column, ' '));
    out << o.help << " [" << o.current(defaults) << "]\n";
  }
  out << "  --help, -h                  this text\n";
  return out.str();
}

}  // namespace sb

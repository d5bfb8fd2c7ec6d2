#include "cli/options.h"

#include <algorithm>
#include <charconv>
#include <set>
#include <sstream>

#include "cli/option_values.h"
#include "core/error.h"
#include "data/dataset_spec.h"
#include "models/registry.h"
#include "train/model_recipe.h"

namespace sb {
namespace {


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
const std::string& comm_model_help() {
  static const std::string help = "also time an all-reduce of this model's gradient size, at the input it is documented with: " +
                                  model_names();
  return help;
}

// The options of `scale` and `comm` that are not TrainConfig's.
const std::vector<OptionSpec>& cli_options() {
  static const std::vector<OptionSpec> rows = {
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
      {"settle-epochs", "N", "epochs per configuration run before the measured ones and left out of the figures", kScale,
       [](CliConfig& c, const std::string& v) { c.scale.settle_epochs = static_cast<int>(to_int_in("settle-epochs", v, 0, kIntMax)); },
       [](const CliConfig& c) { return std::to_string(c.scale.settle_epochs); }},
      {"repeats", "N", "runs of every configuration; its figures are medians over the steady epochs of all of them", kScale,
       [](CliConfig& c, const std::string& v) { c.scale.repeats = static_cast<int>(to_int_in("repeats", v, 1, kIntMax)); },
       [](const CliConfig& c) { return std::to_string(c.scale.repeats); }},
      {"min-bytes", "SIZE", "smallest all-reduce size (e.g. 1K)", kComm,
       [](CliConfig& c, const std::string& v) { c.comm.min_bytes = to_bytes("min-bytes", v); },
       [](const CliConfig& c) { return std::to_string(c.comm.min_bytes); }},
      {"max-bytes", "SIZE", "largest all-reduce size (e.g. 256M)", kComm,
       [](CliConfig& c, const std::string& v) { c.comm.max_bytes = to_bytes("max-bytes", v); },
       [](const CliConfig& c) { return std::to_string(c.comm.max_bytes); }},
      {"dtypes", "LIST", "element types of the sweep: fp32,bf16,fp16", kComm,
       [](CliConfig& c, const std::string& v) { c.comm.dtypes = split_list(v); },
       [](const CliConfig&) { return std::string("fp32,bf16"); }},
      {"collectives", "LIST", "collectives of the sweep: all-reduce,reduce-scatter,all-gather,broadcast", kComm,
       [](CliConfig& c, const std::string& v) { c.comm.collectives = split_list(v); },
       [](const CliConfig&) { return std::string("all-reduce"); }},
      {"iterations", "N", "timed all-reduces per size", kComm,
       [](CliConfig& c, const std::string& v) { c.comm.iterations = static_cast<int>(to_int_in("iterations", v, 1, kIntMax)); },
       [](const CliConfig& c) { return std::to_string(c.comm.iterations); }},
      {"comm-model", "NAME", comm_model_help().c_str(), kComm,
       [](CliConfig& c, const std::string& v) { c.train.model = v; }, [](const CliConfig& c) { return c.train.model; }},
      {"models", "", "print the models, one JSON object a line (name, description, input, classes, parameters, "
       "outputs_log_probabilities), and nothing else, for scripts (bench/scalebench_models.py)", kInfo,
       [](CliConfig& c, const std::string& v) {
         const std::optional<bool> on = on_off_value(v);
         if (!on) bad_value("models", v, "on or off");
         c.list_models = *on;
       },
       [](const CliConfig& c) { return std::string(c.list_models ? "on" : "off"); }},
  };
  return rows;
}

// 11689512 as "11,689,512".
std::string digits_grouped(int64_t n) {
  std::string digits = std::to_string(n), text;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) text += ',';
    text += digits[i];
  }
  return text;
}

// The models' rows for --help: name, description, the input each is documented with and its parameter
// count there.
std::string models_help() {
  std::string text = "\nmodels (--model):\n";
  for (const ModelInfo& m : model_catalog()) {
    std::string name = "  " + m.name;
    name.resize(std::max<size_t>(name.size() + 1, 14), ' ');
    const ModelInput& in = m.home_input;
    const int64_t parameters = count_elements(collect_params(build_model(m.name, in)));
    text += name + m.description + "; documented with " + std::to_string(in.channels) + "x" + std::to_string(in.height) +
            "x" + std::to_string(in.width) + " inputs, " + std::to_string(in.classes) + " classes (" +
            digits_grouped(parameters) + " parameters)\n";
  }
  return text;
}

// Options that were renamed: the old spelling is refused with one sentence giving the new name, never
// taken silently (the same word meant three things).
struct RenamedOption {
  const char* old_name;
  const char* new_name;
  unsigned commands;
  const char* what;
};
constexpr RenamedOption kRenamedOptions[] = {
    {"warm-up", "untimed-init", kTrain | kScale, "the untimed steps before the training clock"},
    {"warmup-epochs", "settle-epochs", kScale, "the epochs per configuration left out of the study's figures"},
};

void refuse_renamed_option(const std::string& name, unsigned mask) {
  for (const RenamedOption& renamed : kRenamedOptions) {
    if (!(renamed.commands & mask)) continue;
    const std::string old_name = renamed.old_name, new_name = renamed.new_name;
    if (name == old_name || name == "no-" + old_name) {
      const std::string prefix = name == old_name ? "--" : "--no-";
      throw UserError(prefix + old_name + " is now called " + prefix + new_name + " (" + renamed.what + "); give " + prefix +
                      new_name + " instead");
    }
  }
}

}  // namespace

const std::vector<OptionSpec>& option_table() {
  static const std::vector<OptionSpec> table = [] {
    std::vector<OptionSpec> rows;
    for (const TrainOption& row : train_options()) {  // every option of TrainConfig, from its row
      rows.push_back({row.name, row.value_name, row.help.c_str(), row.commands,
                      [&row](CliConfig& c, const std::string& v) { row.field.parse(c.train, v, row.name); },
                      [&row](const CliConfig& c) { return row.field.show(c.train); }, row.clearable});
    }
    rows.insert(rows.end(), cli_options().begin(), cli_options().end());
    for (const SweepableOption& sweep : sweepable_options()) {  // --sweep-*: lists of a run option's values
      rows.push_back({sweep.sweep_name, "LIST", sweep.help, kScale,
                      [&sweep](CliConfig& c, const std::string& v) {
                        SweepAxis axis = parse_sweep(sweep, v);
                        std::erase_if(c.scale.sweeps, [&](const SweepAxis& a) { return a.option == axis.option; });
                        c.scale.sweeps.push_back(std::move(axis));
                      },
                      [](const CliConfig&) { return std::string("none"); }});
    }
    return rows;
  }();
  return table;
}

CliConfig parse_options(const std::string& command, unsigned mask, const std::vector<std::string>& args) {
  CliConfig config;
  const auto& table = option_table();
  std::set<std::string> given;  // the options this command line sets: the model's recipe fills the others
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
      else if ((o.value_name[0] == '\0' || o.clearable) && name == std::string("no-") + o.name) spec = &o, negated = true;
    }
    if (!spec) {
      refuse_renamed_option(name, mask);
      throw UserError("unknown option '--" + name + "' for 'scalebench " + command + "'; see scalebench " + command + " --help");
    }
    given.insert(spec->name);
    if (negated && spec->clearable) {  // --no-NAME of a value option: none
      if (has_value) throw UserError("--" + name + " takes no value");
      spec->set(config, "");
      continue;
    }
    if (spec->value_name[0] == '\0') {  // a flag: --NAME, --no-NAME, --NAME=on|off or --NAME on|off
      if (negated && has_value) throw UserError("--no-" + name.substr(3) + " takes no value");
      if (!negated && !has_value && i + 1 < args.size() && on_off_value(args[i + 1]).has_value()) {
        value = args[++i];  // no command takes a bare word, so one after a flag can only be its value
        has_value = true;
      }
      spec->set(config, negated ? "off" : (has_value ? value : "on"));
      continue;
    }
    if (!has_value) {
      if (i + 1 >= args.size()) throw UserError("--" + name + " needs a value (" + spec->value_name + ")");
      value = args[++i];
    }
    spec->set(config, value);
  }
  apply_model_recipe(config.train, [&given](std::string_view option) { return given.count(std::string(option)) > 0; });
  return config;
}

std::string help_text(const std::string& command, unsigned mask, const std::string& summary) {
  CliConfig defaults;
  std::ostringstream out;
  out << "usage: mpirun -np N scalebench " << command << " [options]\n\n" << summary << "\n\noptions:\n";
  for (const auto& o : option_table()) {
    if (!(o.commands & mask)) continue;
    std::string left = std::string("  --") + o.name;
    if (o.value_name[0]) left += std::string(" ") + o.value_name + (o.clearable ? std::string(", --no-") + o.name : "");
    else left += std::string(", --no-") + o.name;
    out << left;
    const size_t column = 30;
    out << (left.size() < column ? std::string(column - left.size(), ' ') : "\n" + std::string(column, ' '));
    out << o.help << " [" << o.current(defaults) << "]\n";
  }
  out << "  --help, -h                  this text\n";
  if (mask & (kTrain | kScale)) out << models_help() << recipe_help() << dataset_forms_help();
  return out.str();
}

}  // namespace sb

#include "predict/predict_options.h"

#include <algorithm>
#include <charconv>
#include <functional>
#include <optional>
#include <sstream>

#include "core/error.h"

namespace sb::predict {
namespace {

struct PredictOption {
  const char* name;
  const char* value_name;  // "" for a flag
  const char* help;
  std::function<void(PredictOptions&, const std::string&)> set;
};

// A positive number of type T, the whole text; else the option's refusal, saying what it expects.
template <class T>
T positive(const std::string& option, const std::string& text, const std::string& expected) {
  T x{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), x);
  if (ec == std::errc() && end == text.data() + text.size() && x > 0) return x;
  throw UserError("--" + option + " expects " + expected + ", got '" + text + "'");
}

// Each comma-separated item of `text` as positive() reads it; an empty item is refused.
template <class T>
std::vector<T> positive_list(const std::string& option, const std::string& text, const std::string& expected) {
  std::vector<T> out;
  for (size_t begin = 0; begin <= text.size();) {
    const size_t comma = std::min(text.find(',', begin), text.size());
    out.push_back(positive<T>(option, text.substr(begin, comma - begin), expected));
    begin = comma + 1;
  }
  return out;
}

const std::vector<PredictOption>& predict_options() {
  static const std::vector<PredictOption> rows = {
      {"study", "FILE", "a `scale` study with a 1-GPU configuration (required)",
       [](PredictOptions& o, const std::string& v) { o.study = v; }},
      {"comm", "FILE", "a `comm` sweep on 2 or more ranks of one node (required)",
       [](PredictOptions& o, const std::string& v) { o.comm = v; }},
      {"comm-inter", "FILE", "a `comm` sweep across nodes, one rank per node: the inter-node level",
       [](PredictOptions& o, const std::string& v) { o.comm_inter = v; }},
      {"network", "SPEC", "nodes=2,gpus-per-node=4,inter=ib:200Gbps[,latency=5us]: the nodes and their link",
       [](PredictOptions& o, const std::string& v) { o.network = v; }},
      {"gpus", "LIST", "GPU counts to predict, e.g. 8,16,64 [powers of two up to 1024]",
       [](PredictOptions& o, const std::string& v) { o.gpus = positive_list<int64_t>("gpus", v, "a comma-separated list of positive counts"); }},
      {"batch-size", "N", "the batch: per GPU under weak scaling, global under strong [the study's --batch-size]",
       [](PredictOptions& o, const std::string& v) { o.batch_size = positive<int64_t>("batch-size", v, "a positive integer"); }},
      {"bucket-mibs", "LIST", "bucket sizes (MiB) searched for the best one [1,2,5,10,25,50,100 and the study's]",
       [](PredictOptions& o, const std::string& v) { o.bucket_mibs = positive_list<double>("bucket-mibs", v, "a comma-separated list of positive sizes in MiB"); }},
      {"out", "FILE", "write the prediction to this new HDF5 file (never overwritten)",
       [](PredictOptions& o, const std::string& v) { o.out = v; }},
      {"csv", "FILE", "also write the tables as CSV (predict to FILE, check to FILE-check.csv)",
       [](PredictOptions& o, const std::string& v) { o.csv = v; }},
      {"json", "FILE", "also write the tables as JSON Lines",
       [](PredictOptions& o, const std::string& v) { o.json = v; }},
      {"check", "", "leave-one-out: predict each measured count of --gpus from the 1-GPU point and compare",
       [](PredictOptions& o, const std::string&) { o.check = true; }},
  };
  return rows;
}

}  // namespace

PredictOptions parse_predict_options(const std::vector<std::string>& args) {
  PredictOptions o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--help" || arg == "-h") {
      o.help = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0) throw UserError("unexpected argument '" + arg + "' for 'scalebench predict'; options start with --; see scalebench predict --help");
    // --NAME VALUE or --NAME=VALUE
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    std::optional<std::string> value;
    if (eq != std::string::npos) value = arg.substr(eq + 1);
    const auto row = std::find_if(predict_options().begin(), predict_options().end(),
                                  [&](const PredictOption& r) { return name == r.name; });
    if (row == predict_options().end())
      throw UserError("unknown option '--" + name + "' for 'scalebench predict'; see scalebench predict --help");
    if (row->value_name[0] == '\0') {  // a flag
      if (value) throw UserError("--" + name + " takes no value");
      row->set(o, "");
      continue;
    }
    if (!value) {
      if (i + 1 >= args.size()) throw UserError("--" + name + " needs a value (" + row->value_name + ")");
      value = args[++i];
    }
    row->set(o, *value);
  }
  if (o.help) return o;
  if (o.study.empty()) throw UserError("--study is required: the `scale` study to scale from (see scalebench predict --help)");
  if (o.comm.empty()) throw UserError("--comm is required: a `comm` sweep on the interconnect to model (see scalebench predict --help)");
  return o;
}

std::string predict_help_text() {
  std::ostringstream out;
  out << "usage: scalebench predict --study STUDY.h5 --comm COMM.h5 [options]\n\n"
      << "Predicts images/s, scaling efficiency and exposed communication at GPU counts that were not measured,\n"
      << "for weak and strong scaling: the 1-GPU compute of a `scale` study, the training's gradient buckets, and\n"
      << "each bucket's all-reduce from a ring model fitted to a `comm` sweep, overlapped with backward on one\n"
      << "communication stream. docs/prediction.md describes the model and its limits.\n\noptions:\n";
  for (const PredictOption& row : predict_options()) {
    std::string left = std::string("  --") + row.name + (row.value_name[0] ? std::string(" ") + row.value_name : "");
    const size_t column = 30;
    out << left << (left.size() < column ? std::string(column - left.size(), ' ') : "\n" + std::string(column, ' ')) << row.help << "\n";
  }
  out << "  --help, -h                  this text\n";
  return out.str();
}

}  // namespace sb::predict

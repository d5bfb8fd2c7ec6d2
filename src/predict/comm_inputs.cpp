#include "predict/comm_inputs.h"

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <vector>

#include "core/error.h"
#include "metrics/results_reader.h"

namespace sb::predict {
namespace {

// The all-reduce rows (collective code 0; a sweep may hold other collectives) of one dtype.
std::vector<TimedSize> timed_rows(const std::vector<CommRow>& rows, int64_t code) {
  std::vector<TimedSize> out;
  for (const CommRow& r : rows)
    if (r.collective == 0 && r.dtype == code && r.time_us_mean > 0) out.push_back({static_cast<double>(r.bytes), r.time_us_mean * 1e-6});
  return out;
}

int64_t code_of(const std::vector<std::string>& names, const std::string& dtype) {
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == dtype) return static_cast<int64_t>(i);
  return -1;
}

}  // namespace

CommFit read_comm_fit(const std::string& option, const std::string& path, const std::string& dtype) {
  const std::string hint = "; measure one with `mpirun -np N scalebench comm --out COMM.h5` on the interconnect to model";
  std::optional<ResultsReader> reader;
  try {
    reader.emplace(path);
  } catch (const UserError& e) {
    throw UserError(option + ": " + e.what() + hint);
  }
  if (!reader->has("/comm")) {
    const std::string kind = reader->has("/study") ? "a `scale` study (give it to --study)" : "not a `comm` sweep";
    throw UserError(option + " '" + path + "' is " + kind + hint);
  }
  CommFit c;
  c.path = path;
  c.ranks = reader->int_attribute("ranks", "/comm");
  c.backend = reader->string_attribute("backend", "/comm");
  if (c.ranks < 2) {
    throw UserError(option + " '" + path + "' was measured on " + std::to_string(c.ranks) +
                    " rank, where an all-reduce exchanges nothing; measure it on 2 or more ranks (mpirun -np 2 or more)");
  }
  const std::vector<std::string> names = reader->string_list_attribute("dtype_names", "/comm");
  const std::vector<CommRow> rows = reader->comm();
  c.dtype = dtype;
  std::vector<TimedSize> samples = timed_rows(rows, code_of(names, dtype));
  if (samples.empty() && dtype != "fp32") {
    c.dtype = "fp32";
    samples = timed_rows(rows, code_of(names, "fp32"));
  }
  c.sizes = static_cast<int64_t>(samples.size());
  std::sort(samples.begin(), samples.end(), [](const TimedSize& a, const TimedSize& b) { return a.bytes < b.bytes; });
  c.samples = samples;
  try {
    c.fit = fit_ring(samples, c.ranks);
  } catch (const std::invalid_argument& e) {
    throw UserError(option + " '" + path + "' has no " + dtype + " sizes that fit the ring model (" + e.what() +
                    "); measure a sweep over several sizes, e.g. --min-bytes 1K --max-bytes 256M --dtypes " + dtype);
  }
  return c;
}

}  // namespace sb::predict

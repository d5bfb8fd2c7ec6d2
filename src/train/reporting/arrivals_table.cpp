#include "train/reporting/arrivals_table.h"

#include <vector>

namespace sb {
namespace {

void write_rank_rows(RunWriter& writer, const EpochSummary& s) {
  const EpochArrivals& a = s.arrivals;
  RunWriter::TableLayout layout;
  layout.block_shape = {static_cast<hsize_t>(a.ranks.size())};
  layout.columns = {"epoch", "steps", "arrival_s", "input_s", "compute_s", "optimizer_s", "last_share"};
  layout.units = {"1", "1", "s", "s", "s", "s", "1"};
  std::vector<std::string> hosts;
  std::vector<double> values;
  for (const RankArrivals& r : a.ranks) {
    hosts.push_back(r.host);
    const double share = r.steps > 0 ? static_cast<double>(r.steps_last) / static_cast<double>(r.steps) : 0.0;
    values.insert(values.end(), {static_cast<double>(s.epoch + 1), static_cast<double>(r.steps), r.arrival_s, r.input_s,
                                 r.compute_s, r.optimizer_s, share});
  }
  layout.extra = {{"hosts", hosts}};
  writer.append_table_block("arrivals", layout, values);
}

void write_verdict_row(RunWriter& writer, const EpochSummary& s) {
  const StragglerVerdict& v = s.arrivals.straggler;
  RunWriter::TableLayout layout;
  layout.columns = {"epoch",     "rank",      "candidate",        "steps",   "last_share",       "excess_s", "threshold_s",
                    "jitter_s", "compute_s", "median_compute_s", "input_s", "median_input_s", "cause"};
  layout.units = {"1", "1", "1", "1", "1", "s", "s", "s", "s", "s", "s", "s", "1"};
  layout.extra = {{"causes", {"none", "compute", "input"}}};
  const std::vector<double> row{static_cast<double>(s.epoch + 1), static_cast<double>(v.rank), static_cast<double>(v.candidate),
                                static_cast<double>(v.steps), v.last_share, v.excess_s, v.threshold_s, v.jitter_s, v.compute_s,
                                v.median_compute_s, v.input_s, v.median_input_s, static_cast<double>(v.cause)};
  writer.append_table_block("straggler", layout, row);
}

}  // namespace

void write_arrivals(RunWriter& writer, const EpochSummary& s) {
  if (!s.arrivals.measured()) return;
  write_rank_rows(writer, s);
  write_verdict_row(writer, s);
}

}  // namespace sb

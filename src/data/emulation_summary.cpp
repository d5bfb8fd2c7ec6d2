#include "data/emulation_summary.h"

#include <algorithm>

namespace sb {
namespace {

InputTotals plus(InputTotals a, const InputTotals& b) {
  a.read_seconds += b.read_seconds;
  a.decode_seconds += b.decode_seconds;
  a.augment_seconds += b.augment_seconds;
  a.copy_seconds += b.copy_seconds;
  a.bytes += b.bytes;
  a.images += b.images;
  a.skipped += b.skipped;
  a.cpu_fallbacks += b.cpu_fallbacks;
  return a;
}

}  // namespace

CountSummary summarize_count(int gpus_per_node, const std::vector<RankEmulation>& ranks, int nodes) {
  CountSummary s;
  s.gpus_per_node = gpus_per_node;
  double wall = 0;
  int64_t images = 0;
  bool any = false;
  for (const RankEmulation& r : ranks) {
    if (r.gpus < 1) continue;
    const double au = accelerator_utilisation(r.run.compute_s, r.run.wall_s);
    s.utilisation = any ? std::min(s.utilisation, au) : au;
    any = true;
    s.gpus += r.gpus;
    s.most_gpus_of_a_rank = std::max(s.most_gpus_of_a_rank, r.gpus);
    wall = std::max(wall, r.run.wall_s);
    images += r.run.images;
    s.totals = plus(s.totals, r.run.totals);
  }
  if (wall > 0) {
    s.images_per_s = static_cast<double>(images) / wall;
    s.bytes_per_s = static_cast<double>(s.totals.bytes) / wall;
    s.files_per_s = static_cast<double>(s.totals.images) / wall;
  }
  const double n = std::max(nodes, 1);
  s.bytes_per_s_per_node = s.bytes_per_s / n;
  s.files_per_s_per_node = s.files_per_s / n;
  s.limit = limiting_stage(s.totals);
  return s;
}

JobSummary summarize_job(int gpus_per_node, const std::vector<RankEmulation>& ranks, const std::vector<std::string>& hosts) {
  JobSummary out;
  std::vector<std::vector<RankEmulation>> of_node;
  for (size_t r = 0; r < ranks.size(); ++r) {
    const std::string& host = r < hosts.size() ? hosts[r] : std::string();
    size_t n = 0;
    while (n < out.nodes.size() && out.nodes[n].host != host) ++n;
    if (n == out.nodes.size()) {
      out.nodes.push_back(NodeSummary{host, CountSummary{}});
      of_node.emplace_back();
    }
    of_node[n].push_back(ranks[r]);
  }
  for (size_t n = 0; n < out.nodes.size(); ++n) out.nodes[n].count = summarize_count(gpus_per_node, of_node[n], 1);
  out.job = summarize_count(gpus_per_node, ranks, static_cast<int>(std::max<size_t>(out.nodes.size(), 1)));
  for (const NodeSummary& node : out.nodes) out.job.utilisation = std::min(out.job.utilisation, node.count.utilisation);
  return out;
}

const char* limit_name(const CountSummary& count) {
  return count.utilisation >= kUtilisationBar ? "compute" : stage_name(count.limit);
}

}  // namespace sb

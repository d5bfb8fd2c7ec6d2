#include <algorithm>

#include "comm/collective.h"
#include "core/error.h"

namespace sb {
namespace {

// In code order: a new collective takes the next code and its row file's name here.
const Collective* const kTable[] = {&kAllReduce, &kReduceScatter, &kAllGather, &kBroadcast};

std::string valid_names() {
  std::string out;
  for (const Collective* c : kTable) out += (out.empty() ? "" : ", ") + std::string(c->name);
  return out;
}

}  // namespace

const Collective& collective_of(CollectiveKind kind) {
  for (const Collective* c : kTable)
    if (c->kind == kind) return *c;
  fatal("collective_of: unknown collective code " + std::to_string(static_cast<int>(kind)));
}

std::vector<std::string> collective_names() {
  std::vector<std::string> names;
  for (const Collective* c : kTable) names.emplace_back(c->name);
  return names;
}

std::vector<CollectiveKind> parse_collectives(const std::vector<std::string>& names) {
  if (names.empty()) throw UserError("--collectives needs at least one collective: " + valid_names());
  std::vector<CollectiveKind> kinds;
  for (const std::string& name : names) {
    const auto* found = std::find_if(std::begin(kTable), std::end(kTable), [&](const Collective* c) { return name == c->name; });
    if (found == std::end(kTable))
      throw UserError("--collectives: unknown collective '" + name + "'; valid collectives: " + valid_names());
    if (std::find(kinds.begin(), kinds.end(), (*found)->kind) != kinds.end())
      throw UserError("--collectives lists '" + name + "' twice");
    kinds.push_back((*found)->kind);
  }
  return kinds;
}

int64_t whole_count(int64_t count, int) { return count; }
int64_t split_count(int64_t count, int ranks) { return count / ranks; }
int64_t multiple_of_ranks(int64_t count, int ranks) { return count / ranks * ranks; }
int64_t at_start(int, int64_t) { return 0; }
int64_t at_rank_block(int rank, int64_t per_rank) { return rank * per_rank; }
int64_t result_at_start(int, int64_t, bool) { return 0; }

}  // namespace sb

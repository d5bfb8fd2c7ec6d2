#include "comm/string_collectives.h"

#include <algorithm>
#include <cstdint>

namespace sb {

std::vector<std::string> allgather_strings(Communicator& comm, const std::string& mine) {
  // Lengths first, then every string padded to the longest, so one fixed-count allgather carries all.
  const std::vector<int64_t> lengths = comm.allgather(static_cast<int64_t>(mine.size()));
  const size_t longest = static_cast<size_t>(*std::max_element(lengths.begin(), lengths.end()));
  std::vector<char> padded(longest, '\0');
  std::copy(mine.begin(), mine.end(), padded.begin());
  const std::vector<char> all = comm.allgather(std::span<const char>(padded));
  std::vector<std::string> strings;
  strings.reserve(lengths.size());
  for (size_t r = 0; r < lengths.size(); ++r)
    strings.emplace_back(all.data() + r * longest, static_cast<size_t>(lengths[r]));
  return strings;
}

std::string broadcast_string(Communicator& comm, const std::string& text, int root) {
  int64_t length = static_cast<int64_t>(text.size());
  comm.broadcast(std::span<int64_t>(&length, 1), root);
  std::string result = comm.rank() == root ? text : std::string(static_cast<size_t>(length), '\0');
  comm.broadcast(std::span<char>(result.data(), result.size()), root);
  return result;
}

}  // namespace sb

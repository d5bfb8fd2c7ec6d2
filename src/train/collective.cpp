#include "train/collective.h"

#include "comm/string_collectives.h"
#include "core/error.h"

namespace sb {

void run_collectively(Communicator& comm, const std::function<void()>& step) {
  std::string message;
  int failed = 0;
  try {
    step();
  } catch (const UserError& e) {
    message = e.what();
    failed = 1;
  }
  const std::vector<int> flags = comm.allgather(failed);
  int first = -1;
  for (size_t r = 0; r < flags.size(); ++r) {
    if (flags[r]) {
      first = static_cast<int>(r);
      break;
    }
  }
  if (first < 0) return;
  const std::string text = broadcast_string(comm, message, first);
  throw UserError(first == 0 ? text : "rank " + std::to_string(first) + ": " + text);
}

}  // namespace sb

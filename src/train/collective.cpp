#include "train/collective.h"

#include <new>

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
  } catch (const std::bad_alloc&) {  // nothing is half-done after a failed allocation: agree on it too
    message = describe_current_exception();
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
  throw AgreedError(first == 0 ? text : "rank " + std::to_string(first) + ": " + text, comm.size(), comm.rank() == 0);
}

}  // namespace sb

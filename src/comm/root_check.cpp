#include "comm/root_check.h"

#include <cstdint>
#include <exception>
#include <string>

#include "comm/string_collectives.h"
#include "core/error.h"

namespace sb {

void check_on_root(Communicator& comm, int root, const std::function<void()>& check) {
  int32_t failed = 0;
  std::string message;
  if (comm.rank() == root) {
    try {
      check();
    } catch (const UserError& error) {
      failed = 1;
      message = error.what();
    } catch (const std::exception& error) {
      fatal(std::string("unexpected error in a check on rank ") + std::to_string(root) + ": " + error.what());
    }
  }
  comm.broadcast(std::span<int32_t>(&failed, 1), root);
  if (failed) throw AgreedError(broadcast_string(comm, message, root), comm.size(), comm.rank() == 0);
}

}  // namespace sb

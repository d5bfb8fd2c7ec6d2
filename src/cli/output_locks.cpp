#include "cli/output_locks.h"

#include "comm/root_check.h"

namespace sb {

std::vector<std::unique_ptr<OutputLock>> lock_outputs(Communicator& world, const std::string& out, const std::string& checkpoint) {
  std::vector<std::unique_ptr<OutputLock>> locks;
  check_on_root(world, 0, [&] {
    if (!out.empty()) locks.push_back(OutputLock::acquire(out, "--out"));
    if (!checkpoint.empty() && checkpoint != out + ".ckpt.h5") locks.push_back(OutputLock::acquire(checkpoint, "--checkpoint"));
  });
  return locks;
}

}  // namespace sb

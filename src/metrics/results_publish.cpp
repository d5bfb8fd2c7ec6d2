#include "metrics/results_publish.h"

#include <filesystem>
#include <system_error>

#include "core/error.h"

namespace sb {

void publish_copy(const std::string& from, const std::string& to) {
  const std::string staging = to + ".publishing";
  std::error_code ec;
  std::filesystem::copy_file(from, staging, std::filesystem::copy_options::overwrite_existing, ec);
  if (!ec) std::filesystem::rename(staging, to, ec);
  if (ec) fatal("could not publish the results file " + to + ": " + ec.message());
}

}  // namespace sb

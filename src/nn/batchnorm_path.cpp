#include "nn/batchnorm_path.h"

#include "core/error.h"

namespace sb {
namespace {

constexpr BatchNormPath kPaths[] = {BatchNormPath::Auto, BatchNormPath::Graph, BatchNormPath::Pointwise,
                                    BatchNormPath::Legacy};

}  // namespace

const char* batchnorm_path_name(BatchNormPath path) {
  switch (path) {
    case BatchNormPath::Auto: return "auto";
    case BatchNormPath::Graph: return "graph";
    case BatchNormPath::Pointwise: return "pointwise";
    case BatchNormPath::Legacy: return "legacy";
  }
  return "?";
}

BatchNormPath parse_batchnorm_path(const std::string& name) {
  for (const BatchNormPath p : kPaths)
    if (name == batchnorm_path_name(p)) return p;
  throw UserError("--batchnorm-path must be " + batchnorm_path_choices() + ", got '" + name + "'");
}

std::string batchnorm_path_choices() {
  std::string s;
  const size_t n = sizeof(kPaths) / sizeof(kPaths[0]);
  for (size_t i = 0; i < n; ++i) {
    if (i > 0) s += i + 1 == n ? " or " : ", ";
    s += batchnorm_path_name(kPaths[i]);
  }
  return s;
}

}  // namespace sb

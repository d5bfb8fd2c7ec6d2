#include "nn/batchnorm_path.h"

namespace sb {

std::span<const EnumName<BatchNormPath>> enum_names(BatchNormPath) {
  static constexpr EnumName<BatchNormPath> kNames[] = {
      {BatchNormPath::Auto, "auto"}, {BatchNormPath::Graph, "graph"}, {BatchNormPath::Pointwise, "pointwise"},
      {BatchNormPath::Legacy, "legacy"}};
  return kNames;
}

}  // namespace sb

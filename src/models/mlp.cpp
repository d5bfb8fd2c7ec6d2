#include "models/mlp.h"

namespace sb {

LayerSpec mlp(const ModelInput& in) {
  return sequential("", {
      flatten("flatten"),
      linear("fc1", in.channels * in.height * in.width, 512, true), relu("relu1"),
      linear("fc2", 512, 512, true), relu("relu2"),
      linear("fc3", 512, in.classes, true),
  });
}

}  // namespace sb

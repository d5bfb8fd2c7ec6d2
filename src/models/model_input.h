// What a model is built for: the sample shape and the number of classes.
#pragma once
#include <cstdint>

namespace sb {
struct ModelInput {
  int64_t channels = 1;
  int64_t height = 28;
  int64_t width = 28;
  int64_t classes = 10;
};
}  // namespace sb

// The names of BatchNorm2d's CUDA paths (ContextOptions::batchnorm_path), as refusals and the GPU tests name them.
#include <gtest/gtest.h>

#include "nn/batchnorm_path.h"

namespace sb {
namespace {

TEST(BatchNormPath, NamesRoundTrip) {
  for (const BatchNormPath p : {BatchNormPath::Auto, BatchNormPath::Graph, BatchNormPath::Pointwise, BatchNormPath::Legacy})
    EXPECT_EQ(find_by_name<BatchNormPath>(name_of(p)), p);
  EXPECT_STREQ(name_of(BatchNormPath::Pointwise), "pointwise");
  EXPECT_EQ(name_list<BatchNormPath>(), "auto, graph, pointwise, legacy");
}

}  // namespace
}  // namespace sb

// The names of BatchNorm2d's CUDA paths (the --batchnorm-path values) and their parsing.
#include <gtest/gtest.h>

#include "core/error.h"
#include "nn/batchnorm_path.h"

namespace sb {
namespace {

TEST(BatchNormPath, NamesRoundTrip) {
  for (const BatchNormPath p : {BatchNormPath::Auto, BatchNormPath::Graph, BatchNormPath::Pointwise, BatchNormPath::Legacy})
    EXPECT_EQ(parse_batchnorm_path(batchnorm_path_name(p)), p);
  EXPECT_STREQ(batchnorm_path_name(BatchNormPath::Pointwise), "pointwise");
  EXPECT_EQ(batchnorm_path_choices(), "auto, graph, pointwise or legacy");
}

TEST(BatchNormPath, UnknownNameNamesTheOptionAndTheChoices) {
  try {
    parse_batchnorm_path("cudnn");
    FAIL() << "no error";
  } catch (const UserError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("--batchnorm-path"), std::string::npos) << m;
    EXPECT_NE(m.find("'cudnn'"), std::string::npos) << m;
    EXPECT_NE(m.find("auto, graph, pointwise or legacy"), std::string::npos) << m;
  }
  EXPECT_THROW(parse_batchnorm_path("Graph"), UserError);  // names are lower case, like the other options
}

}  // namespace
}  // namespace sb

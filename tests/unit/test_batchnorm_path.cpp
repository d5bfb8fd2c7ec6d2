// The names of BatchNorm2d's CUDA paths and the --batchnorm-path option that picks one.
#include <gtest/gtest.h>

#include "core/error.h"
#include "nn/batchnorm_path.h"
#include "train/train_options.h"

namespace sb {
namespace {

TEST(BatchNormPath, NamesRoundTrip) {
  for (const BatchNormPath p : {BatchNormPath::Auto, BatchNormPath::Graph, BatchNormPath::Pointwise, BatchNormPath::Legacy})
    EXPECT_EQ(find_by_name<BatchNormPath>(name_of(p)), p);
  EXPECT_STREQ(name_of(BatchNormPath::Pointwise), "pointwise");
  EXPECT_EQ(name_list<BatchNormPath>(), "auto, graph, pointwise, legacy");
}

TEST(BatchNormPath, TheOptionSetsTheFieldAndRefusesAnUnknownName) {
  const TrainOption* row = train_option_named("batchnorm-path");
  ASSERT_NE(row, nullptr);
  TrainConfig c;
  EXPECT_EQ(c.batchnorm_path, BatchNormPath::Auto);
  row->field.parse(c, "legacy", row->name);
  EXPECT_EQ(c.batchnorm_path, BatchNormPath::Legacy);
  try {
    row->field.parse(c, "cudnn", row->name);
    FAIL() << "no error";
  } catch (const UserError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("--batchnorm-path"), std::string::npos) << m;
    EXPECT_NE(m.find("'cudnn'"), std::string::npos) << m;
    EXPECT_NE(m.find("auto, graph, pointwise, legacy"), std::string::npos) << m;
  }
  EXPECT_EQ(c.batchnorm_path, BatchNormPath::Legacy);
}

}  // namespace
}  // namespace sb

// The choice to leave a network's trailing LogSoftmax to the loss (nn/fusion_plan.h): which networks it
// applies to, and its line in the plan report and the run's summary.
#include <gtest/gtest.h>

#include <string>

#include "models/mnist_cnn.h"
#include "models/registry.h"
#include "nn/fusion_plan.h"
#include "nn/spec.h"

namespace sb {
namespace {

TEST(LogSoftmaxInLoss, OnlyARootSequentialEndingInLogSoftmax) {
  EXPECT_TRUE(ends_in_log_softmax(mnist_cnn(ModelInput{})));
  EXPECT_FALSE(ends_in_log_softmax(log_softmax("alone")));
  EXPECT_FALSE(ends_in_log_softmax(sequential("", {log_softmax("only")})));  // nothing would be left
  EXPECT_FALSE(ends_in_log_softmax(sequential("", {log_softmax("first"), linear("fc", 4, 2, true)})));
  EXPECT_FALSE(ends_in_log_softmax(sequential("", {linear("fc", 4, 2, true), relu("r")})));
  EXPECT_TRUE(ends_in_log_softmax(sequential("", {linear("fc", 4, 2, true), log_softmax("logp")})));
}

// The models' own record of their output agrees with the spec: the loss may take exactly the LogSoftmax
// of the models trained with NLL.
TEST(LogSoftmaxInLoss, AgreesWithEachModelsOutputKind) {
  for (const ModelInfo& info : model_catalog())
    EXPECT_EQ(ends_in_log_softmax(build_model(info.name, ModelInput{3, 32, 32, 10})), info.outputs_log_probabilities)
        << info.name;
}

TEST(LogSoftmaxInLoss, TheRecordJoinsTheFusedLayersOfTheSummary) {
  const std::string record = log_softmax_in_loss_record(log_softmax("log_softmax"));
  EXPECT_EQ(record, std::string("log_softmax: softmax cross-entropy in the loss kernel") + kLayerKernelsRecord + "\n");
  const std::string summary = fusion_summary("fc1 + relu3 + dropout2: gemm epilogue relu, dropout in place (fused layers)\n" + record);
  EXPECT_EQ(summary,
            "fused layers: fc1 + relu3 + dropout2: gemm epilogue relu, dropout in place; "
            "log_softmax: softmax cross-entropy in the loss kernel");
}

}  // namespace
}  // namespace sb

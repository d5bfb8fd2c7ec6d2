// The --data forms' registry (data/dataset_spec.h): one row per form, which parsing, the kind's name,
// the sample shape, the refusals, --help, whether a form streams and its batch source all read; the
// models' documented inputs are forms' shapes.
#include <gtest/gtest.h>

#include <array>
#include <string>

#include "data/dataset_spec.h"
#include "data/host_batch.h"
#include "data/input_counters.h"
#include "models/registry.h"

namespace sb {
namespace {

TEST(DatasetForms, EachKindHasOneRowWhoseNameParsesToIt) {
  for (DatasetKind kind : {DatasetKind::Mnist, DatasetKind::FashionMnist, DatasetKind::Cifar10, DatasetKind::Cifar100,
                           DatasetKind::Synthetic}) {
    int rows = 0;
    for (const DatasetForm& form : dataset_forms()) rows += form.kind == kind ? 1 : 0;
    EXPECT_EQ(rows, 1) << kind_name(kind);
    const DatasetForm& form = dataset_form(kind);
    EXPECT_STREQ(kind_name(kind), form.name);
    const std::string text = kind == DatasetKind::Synthetic ? form.name : std::string(form.name) + ":/data/x";
    EXPECT_EQ(parse_dataset_spec(text).kind, kind) << text;
  }
}

TEST(DatasetForms, OnlyImageFilesStreamAndALoadedSetKnowsItsForm) {
  EXPECT_TRUE(streamed(parse_dataset_spec("imagefolder:/i")));
  EXPECT_TRUE(streamed(parse_dataset_spec("tars:/t")));
  for (const char* text : {"fashion-mnist", "mnist:/m", "cifar10:/c", "cifar100:/c", "synthetic"})
    EXPECT_FALSE(streamed(parse_dataset_spec(text))) << text;
  const TrainTest data = load_dataset(parse_dataset_spec("synthetic:1x4x4:3:20:5"));
  EXPECT_EQ(data.train.kind, DatasetKind::Synthetic);
  EXPECT_FALSE(data.train.streamed());
  // Its row's batch source: the data set in memory, gathered on the host.
  InputCounters counters;
  const auto source = make_batch_source(data.train, true, BatchOptions{}, BatchFormat{}, BadImages::Fail, 0, counters);
  EXPECT_NE(dynamic_cast<const HostBatchBuilder*>(source.get()), nullptr);
}

TEST(DatasetForms, SampleShapesComeFromTheRowOrTheSyntheticSpec) {
  const auto expect_shape = [](const std::string& text, SampleShape want) {
    const SampleShape got = sample_shape(parse_dataset_spec(text));
    EXPECT_EQ((std::array<int64_t, 4>{got.channels, got.height, got.width, got.classes}),
              (std::array<int64_t, 4>{want.channels, want.height, want.width, want.classes}))
        << text;
  };
  expect_shape("fashion-mnist", {1, 28, 28, 10});
  expect_shape("mnist:/m", {1, 28, 28, 10});
  expect_shape("cifar10:/c", {3, 32, 32, 10});
  expect_shape("cifar100:/c", {3, 32, 32, 100});
  expect_shape("synthetic", {3, 32, 32, 100});
  expect_shape("synthetic:1x2x3:4", {1, 2, 3, 4});
}

TEST(DatasetForms, RefusalsAndHelpListEverySpelling) {
  const std::string valid = valid_dataset_forms(), help = dataset_forms_help();
  for (const DatasetForm& form : dataset_forms()) {
    for (const char* spelling : form.spellings) {
      EXPECT_NE(valid.find(spelling), std::string::npos) << spelling;
      EXPECT_NE(help.find(spelling), std::string::npos) << spelling;
    }
    EXPECT_NE(help.find(form.description), std::string::npos) << form.name;
  }
}

// ImageNet's shape, which torchvision's ResNets are documented with: no form reads ImageNet's files
// yet; synthetic:3x224x224:1000 gives its shape.
bool imagenet_shaped(const ModelInput& in) {
  return in.channels == 3 && in.height == 224 && in.width == 224 && in.classes == 1000;
}

TEST(DatasetForms, EveryModelIsDocumentedWithTheShapeOfAForm) {
  for (const ModelInfo& m : model_catalog()) {
    bool found = imagenet_shaped(m.home_input);
    for (const DatasetForm& form : dataset_forms()) {
      const SampleShape& s = form.shape;
      found |= s.channels == m.home_input.channels && s.height == m.home_input.height && s.width == m.home_input.width &&
               s.classes == m.home_input.classes;
    }
    EXPECT_TRUE(found) << m.name;
  }
}

}  // namespace
}  // namespace sb

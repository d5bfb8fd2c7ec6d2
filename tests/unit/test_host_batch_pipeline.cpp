// The host batch pipeline of --input host: a batch built by the workers, in any number, equals the
// single-threaded CPU batch (assemble_batch) bit for bit for the same seed, epoch and rank, augmentation
// included, in every dtype and layout the GPU takes; a worker's exception reaches the thread that takes
// the batch; batches come out in the order asked for, also after dropping the ones built ahead; the files
// --bad-images skip leaves out come with the batch that skipped them, never with a dropped one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "data/batch.h"
#include "data/batch_schedule.h"
#include "data/host_batch.h"
#include "data/host_batch_pipeline.h"
#include "data/sampler.h"
#include "data/synthetic.h"

namespace sb {
namespace {

constexpr uint64_t kSeed = 17;
constexpr int kRank = 1, kWorld = 2;

// The reference: assemble_batch's fp32 NCHW batch, in `format`'s dtype (rounded as the GPU kernel rounds)
// and layout, as raw bytes.
std::vector<std::byte> reference_batch(const Dataset& data, std::span<const int64_t> indices, const BatchOptions& options,
                                       const AugmentKey& key, uint64_t first_position, BatchFormat format) {
  Tensor<float> images;
  std::vector<int32_t> labels;
  assemble_batch(data, indices, options, key, first_position, images, labels);
  const int C = data.channels, H = data.height, W = data.width;
  const bool channels_last = format.layout == Layout::NHWC && C > 1;
  const size_t element = dtype_size(format.dtype);
  std::vector<std::byte> out(static_cast<size_t>(images.numel()) * element);
  for (int64_t n = 0; n < static_cast<int64_t>(indices.size()); ++n)
    for (int c = 0; c < C; ++c)
      for (int y = 0; y < H; ++y)
        for (int x = 0; x < W; ++x) {
          const float v = images.data()[((n * C + c) * H + y) * W + x];
          const int64_t at = n * C * H * W + (channels_last ? (static_cast<int64_t>(y) * W + x) * C + c
                                                             : (static_cast<int64_t>(c) * H + y) * W + x);
          std::byte* dst = out.data() + static_cast<size_t>(at) * element;
          if (format.dtype == DType::F32) {
            std::memcpy(dst, &v, 4);
          } else {
            const uint16_t bits = format.dtype == DType::F16 ? float_to_fp16_bits(v) : float_to_bf16_bits(v);
            std::memcpy(dst, &bits, 2);
          }
        }
  return out;
}

// A ring of plain host buffers for the pipeline.
struct Ring {
  Ring(int slots, int64_t max_batch, int64_t sample_bytes)
      : images(static_cast<size_t>(slots * max_batch * sample_bytes)), labels(static_cast<size_t>(slots * max_batch)) {
    for (int s = 0; s < slots; ++s)
      buffers.push_back(HostBatchBuffer{images.data() + s * max_batch * sample_bytes, labels.data() + s * max_batch});
  }
  std::vector<std::byte> images;
  std::vector<int32_t> labels;
  std::vector<HostBatchBuffer> buffers;
};

struct Case {
  int channels;
  BatchFormat format;
};

class HostBatches : public ::testing::TestWithParam<Case> {};

TEST_P(HostBatches, TheWorkersBuildTheSingleThreadedBatchBitForBit) {
  const Case p = GetParam();
  const TrainTest data = make_synthetic(SyntheticShape{p.channels, 12, 10, 5}, 203, 8, 3);
  const BatchOptions augmentation = cifar_augmentation();
  const int64_t batch = 24;
  const HostBatchBuilder builder(data.train, augmentation, p.format);
  for (const int workers : {1, 2, 3, 8}) {
    SCOPED_TRACE("workers " + std::to_string(workers));
    Ring ring(3, batch, builder.sample_bytes());
    HostBatchPipeline pipeline(workers, ring.buffers, batch, builder.sample_bytes());
    BatchSchedule schedule(data.train.size(), kWorld, kRank, kSeed, false, batch);
    // Two epochs' batches, the last of each shorter, three queued at a time as the engine keeps them.
    std::vector<ScheduledBatch> wanted;
    for (ScheduledBatch b{0, 0, 0}; b.epoch < 2; b = schedule.after(b)) wanted.push_back(b);
    ASSERT_EQ(wanted.size(), 10u);  // 102 samples per rank and epoch: 4 batches of 24 and one of 6
    size_t submitted = 0;
    for (const ScheduledBatch& b : wanted) {
      while (submitted < wanted.size() && pipeline.free_slots() > 0) {
        const ScheduledBatch& next = wanted[submitted++];
        pipeline.submit(BatchRequest{&builder, schedule.indices(next), AugmentKey{kSeed, next.epoch, kRank}, next.first_position});
      }
      const HostBatch got = pipeline.take();
      const std::span<const int64_t> indices = schedule.indices(b);
      ASSERT_EQ(got.rows, static_cast<int64_t>(indices.size()));
      const std::vector<std::byte> want =
          reference_batch(data.train, indices, augmentation, AugmentKey{kSeed, b.epoch, kRank}, b.first_position, p.format);
      ASSERT_EQ(std::memcmp(got.buffer.images, want.data(), want.size()), 0) << "epoch " << b.epoch << " batch " << b.batch;
      for (size_t j = 0; j < indices.size(); ++j)
        ASSERT_EQ(got.buffer.labels[j], data.train.labels[static_cast<size_t>(indices[j])]);
      pipeline.release(got.slot);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, HostBatches,
                         ::testing::Values(Case{3, {DType::F32, Layout::NCHW}}, Case{3, {DType::F32, Layout::NHWC}},
                                           Case{3, {DType::BF16, Layout::NHWC}}, Case{3, {DType::F16, Layout::NCHW}},
                                           Case{1, {DType::BF16, Layout::NHWC}}));

TEST(HostBatchSchedule, PredictsTheTrainersBatchesAcrossEpochs) {
  for (const bool drop_last : {false, true}) {
    BatchSchedule schedule(101, 3, 2, kSeed, drop_last, 8);
    const DistributedSampler sampler(101, 3, 2, true, kSeed, drop_last);
    ScheduledBatch b{0, 0, 0};
    for (int64_t epoch = 0; epoch < 3; ++epoch) {
      const auto batches = split_batches(sampler.indices(epoch), 8, drop_last);
      uint64_t position = 0;
      for (size_t k = 0; k < batches.size(); ++k) {
        ASSERT_EQ(b.epoch, epoch);
        ASSERT_EQ(b.first_position, position);
        const auto found = schedule.at(epoch, position);
        ASSERT_TRUE(found.has_value());
        EXPECT_EQ(found->batch, static_cast<int64_t>(k));
        const auto indices = schedule.indices(b);
        EXPECT_EQ(std::vector<int64_t>(indices.begin(), indices.end()), batches[k]) << "epoch " << epoch << " batch " << k;
        position += batches[k].size();
        b = schedule.after(b);
      }
    }
    EXPECT_FALSE(schedule.at(0, 3).has_value()) << "no batch starts inside another";
  }
}

TEST(HostBatchPipelineErrors, AWorkersExceptionSurfacesWhereTheBatchIsTaken) {
  const TrainTest data = make_synthetic(SyntheticShape{1, 6, 6, 3}, 40, 4, 3);
  const HostBatchBuilder builder(data.train, BatchOptions{}, BatchFormat{});
  Ring ring(2, 16, builder.sample_bytes());
  HostBatchPipeline pipeline(4, ring.buffers, 16, builder.sample_bytes());
  const std::vector<int64_t> bad = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 40, 11};  // 40 is past the end
  const std::vector<int64_t> good = {5, 6, 7};
  pipeline.submit(BatchRequest{&builder, bad, AugmentKey{}, 0});
  pipeline.submit(BatchRequest{&builder, good, AugmentKey{}, 0});
  try {
    pipeline.take();
    FAIL() << "the bad index was not reported";
  } catch (const std::out_of_range& e) {
    EXPECT_NE(std::string(e.what()).find("index 40"), std::string::npos) << e.what();
  }
  // The pipeline goes on: the failed batch's slot is free again and the next batch is intact.
  EXPECT_EQ(pipeline.free_slots(), 1);
  const HostBatch next = pipeline.take();
  ASSERT_EQ(next.rows, 3);
  EXPECT_EQ(next.buffer.labels[2], data.train.labels[7]);
}

TEST(HostBatchPipelineErrors, MisuseIsALogicError) {
  const TrainTest data = make_synthetic(SyntheticShape{1, 4, 4, 3}, 10, 4, 3);
  const HostBatchBuilder builder(data.train, BatchOptions{}, BatchFormat{});
  Ring ring(1, 4, builder.sample_bytes());
  HostBatchPipeline pipeline(2, ring.buffers, 4, builder.sample_bytes());
  const std::vector<int64_t> five = {0, 1, 2, 3, 4}, two = {0, 1};
  EXPECT_THROW(pipeline.take(), std::logic_error);
  EXPECT_THROW(pipeline.submit(BatchRequest{&builder, five, AugmentKey{}, 0}), std::logic_error);
  pipeline.submit(BatchRequest{&builder, two, AugmentKey{}, 0});
  EXPECT_THROW(pipeline.submit(BatchRequest{&builder, two, AugmentKey{}, 0}), std::logic_error) << "no free slot";
  EXPECT_THROW(HostBatchPipeline(0, ring.buffers, 4, builder.sample_bytes()), std::invalid_argument);
}

TEST(HostBatchPipelineOrder, DroppedBatchesMakeWayForTheOneAskedFor) {
  const TrainTest data = make_synthetic(SyntheticShape{3, 8, 8, 4}, 64, 4, 3);
  const HostBatchBuilder builder(data.train, cifar_augmentation(), BatchFormat{});
  Ring ring(3, 8, builder.sample_bytes());
  HostBatchPipeline pipeline(3, ring.buffers, 8, builder.sample_bytes());
  std::vector<std::vector<int64_t>> predicted = {{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 10, 11}};
  for (const auto& p : predicted) pipeline.submit(BatchRequest{&builder, p, AugmentKey{kSeed, 0, 0}, 0});
  const std::vector<int64_t> asked = {20, 21, 22, 23, 24, 25, 26, 27};
  const BatchRequest request{&builder, asked, AugmentKey{kSeed, 2, 0}, 16};
  EXPECT_FALSE(pipeline.front_is(request));
  EXPECT_TRUE(pipeline.front_is(BatchRequest{&builder, predicted[0], AugmentKey{kSeed, 0, 0}, 0}));
  pipeline.discard_queued();
  EXPECT_EQ(pipeline.queued(), 0);
  EXPECT_EQ(pipeline.free_slots(), 3);
  pipeline.submit(request);
  EXPECT_TRUE(pipeline.front_is(request));
  const HostBatch got = pipeline.take();
  const auto want = reference_batch(data.train, asked, cifar_augmentation(), AugmentKey{kSeed, 2, 0}, 16, BatchFormat{});
  EXPECT_EQ(std::memcmp(got.buffer.images, want.data(), want.size()), 0);
}

TEST(HostBatchPipelineOrder, DestroyingAPipelineWithBatchesQueuedStopsItsWorkers) {
  const TrainTest data = make_synthetic(SyntheticShape{3, 16, 16, 4}, 256, 4, 3);
  const HostBatchBuilder builder(data.train, cifar_augmentation(), BatchFormat{});
  const std::vector<int64_t> indices(64, 7);
  for (int round = 0; round < 20; ++round) {
    Ring ring(4, 64, builder.sample_bytes());
    HostBatchPipeline pipeline(4, ring.buffers, 64, builder.sample_bytes());
    for (int k = 0; k < 4; ++k) pipeline.submit(BatchRequest{&builder, indices, AugmentKey{kSeed, k, 0}, 0});
  }  // each pipeline goes with its batches half built: the test ends instead of hanging
}

// A source whose every row "skips" its sample's file, as image files under --bad-images skip do.
class SkippingSource : public BatchSource {
 public:
  int64_t sample_bytes() const override { return 1; }
  void fill(std::span<const int64_t> indices, const AugmentKey&, uint64_t, int64_t row_begin, int64_t row_end, std::byte*,
            int32_t* labels, SkippedFiles* skipped = nullptr) const override {
    for (int64_t j = row_begin; j < row_end; ++j) {
      labels[j] = 0;
      skipped->add("file" + std::to_string(indices[static_cast<size_t>(j)]));
    }
  }
};

TEST(HostBatchPipelineSkips, ABatchsSkippedFilesComeWithItAndADroppedBatchsNever) {
  const SkippingSource source;
  Ring ring(2, 8, 1);
  HostBatchPipeline pipeline(3, ring.buffers, 8, 1);
  const std::vector<int64_t> dropped = {1, 2, 3}, taken = {4, 5};
  pipeline.submit(BatchRequest{&source, dropped, AugmentKey{}, 0});
  pipeline.discard_queued();
  pipeline.submit(BatchRequest{&source, taken, AugmentKey{}, 0});
  HostBatch batch = pipeline.take();
  std::sort(batch.skipped.begin(), batch.skipped.end());  // the workers note them in any order
  EXPECT_EQ(batch.skipped, (std::vector<std::string>{"file4", "file5"}));
  pipeline.release(batch.slot);
  // A slot used again starts with no skipped files of its own.
  pipeline.submit(BatchRequest{&source, dropped, AugmentKey{}, 0});
  pipeline.submit(BatchRequest{&source, taken, AugmentKey{}, 0});
  EXPECT_EQ(pipeline.take().skipped.size(), 3u);
  EXPECT_EQ(pipeline.take().skipped.size(), 2u);
}

}  // namespace
}  // namespace sb

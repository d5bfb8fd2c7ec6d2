// The host half of --decode gpu: the workers read each row's file and its header, choose its crop box
// (image_batch.h's image_crop_box, so both decoders take the same crops) and leave the still-encoded bytes
// for the GPU's decoder. A batch's rows are EncodedRow records, written where a decoded batch would go (the
// pipeline's ring of host buffers); the bytes themselves sit in an EncodedRowPool, one buffer per record.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "data/batch_source.h"
#include "data/dataset.h"
#include "data/image/resized_crop.h"
#include "data/image_decoding.h"
#include "data/input_counters.h"

namespace sb {

struct EncodedRow {
  const uint8_t* bytes = nullptr;  // the file's bytes (in the pool), valid until the record is written again
  uint64_t size = 0;
  int32_t width = 0, height = 0;   // from the header
  ResizedCropBox box;                 // in the full-size image
  int32_t label = 0;
  int64_t index = 0;               // in the data set, for messages
  const std::string* problem = nullptr;  // why the file can't be read or its header decoded; nullptr: none
};

// Per record of a ring of host buffers, the bytes of its file and its problem.
class EncodedRowPool {
 public:
  // ring: the host buffers' memory, of ring_bytes, where records are written.
  EncodedRowPool(const std::byte* ring, size_t ring_bytes);
  std::vector<uint8_t>& bytes_of(const EncodedRow* record) { return bytes_[slot_of(record)]; }
  std::string& problem_of(const EncodedRow* record) { return problems_[slot_of(record)]; }

 private:
  size_t slot_of(const EncodedRow* record) const;
  const std::byte* ring_;
  std::vector<std::vector<uint8_t>> bytes_;
  std::vector<std::string> problems_;
};

class EncodedRowSource : public BatchSource {
 public:
  // `data`, `pool` and `counters` must outlive the source.
  EncodedRowSource(const Dataset& data, bool training, EncodedRowPool& pool, InputCounters& counters);
  int64_t sample_bytes() const override { return sizeof(EncodedRow); }
  void fill(std::span<const int64_t> indices, const AugmentKey& key, uint64_t first_position, int64_t row_begin,
            int64_t row_end, std::byte* images, int32_t* labels) const override;

 private:
  const Dataset& data_;
  bool training_;
  EncodedRowPool& pool_;
  InputCounters& counters_;
};

}  // namespace sb

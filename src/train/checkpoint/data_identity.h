// What identifies the data a run trains on, recorded in its checkpoints so that a resume can refuse
// other data: the canonical --data spec, the sample counts and a checksum of the labels.
#pragma once
#include <cstdint>
#include <string>

#include "data/dataset.h"

namespace sb {

struct DataIdentity {
  std::string spec;           // canonical --data text (to_string(parse_dataset_spec(...)))
  int64_t train_samples = 0;  // after --train-limit
  int64_t test_samples = 0;   // the whole test set (--test-limit only shortens evaluation)
  uint32_t labels_crc32 = 0;  // CRC-32 of the training labels, then the test labels, as little-endian int32
};

// The identity of `data`, loaded from the --data text `data_text`.
DataIdentity data_identity(const std::string& data_text, const TrainTest& data);

// The canonical form of a --data text; the text itself where it does not parse.
std::string canonical_data_spec(const std::string& data_text);

// Throws UserError naming the first field where `given` differs from `stored` (the checkpoint's), with
// both values.
void check_same_data(const DataIdentity& stored, const DataIdentity& given, const std::string& checkpoint_path);

}  // namespace sb

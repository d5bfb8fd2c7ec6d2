#include "train/checkpoint/data_identity.h"

#include <zlib.h>

#include "core/error.h"
#include "data/dataset_spec.h"

namespace sb {
namespace {

uLong crc_of_labels(uLong crc, const std::vector<int32_t>& labels) {
  for (int32_t label : labels) {
    const uint32_t v = static_cast<uint32_t>(label);
    const Bytef bytes[4] = {static_cast<Bytef>(v), static_cast<Bytef>(v >> 8), static_cast<Bytef>(v >> 16),
                            static_cast<Bytef>(v >> 24)};
    crc = crc32(crc, bytes, 4);
  }
  return crc;
}

}  // namespace

std::string canonical_data_spec(const std::string& data_text) {
  try {
    return to_string(parse_dataset_spec(data_text));
  } catch (const UserError&) {
    return data_text;
  }
}

DataIdentity data_identity(const std::string& data_text, const TrainTest& data) {
  DataIdentity id;
  id.spec = canonical_data_spec(data_text);
  id.train_samples = data.train.size();
  id.test_samples = data.test.size();
  id.labels_crc32 = static_cast<uint32_t>(crc_of_labels(crc_of_labels(crc32(0L, Z_NULL, 0), data.train.labels), data.test.labels));
  return id;
}

void check_same_data(const DataIdentity& stored, const DataIdentity& given, const std::string& checkpoint_path) {
  const auto refuse = [&](const std::string& field, const std::string& was, const std::string& is) {
    throw UserError("the data differ from the run of checkpoint " + checkpoint_path + ": its " + field + " was " + was +
                    ", this run's is " + is + "; resume with the --data and --train-limit of that run, on the same files");
  };
  if (stored.spec != given.spec) refuse("data set (--data)", "'" + stored.spec + "'", "'" + given.spec + "'");
  if (stored.train_samples != given.train_samples)
    refuse("training sample count", std::to_string(stored.train_samples), std::to_string(given.train_samples));
  if (stored.test_samples != given.test_samples)
    refuse("test sample count", std::to_string(stored.test_samples), std::to_string(given.test_samples));
  if (stored.labels_crc32 != given.labels_crc32)
    refuse("label checksum (CRC-32)", std::to_string(stored.labels_crc32),
           std::to_string(given.labels_crc32) + " (the data files changed)");
}

}  // namespace sb

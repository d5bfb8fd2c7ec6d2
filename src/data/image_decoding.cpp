#include "data/image_decoding.h"

namespace sb {

std::span<const EnumName<ImageDecoding>> enum_names(ImageDecoding) {
  static constexpr EnumName<ImageDecoding> names[] = {{ImageDecoding::Cpu, "cpu"}, {ImageDecoding::Gpu, "gpu"}};
  return names;
}

std::span<const EnumName<BadImages>> enum_names(BadImages) {
  static constexpr EnumName<BadImages> names[] = {{BadImages::Fail, "fail"}, {BadImages::Skip, "skip"}};
  return names;
}

}  // namespace sb

#include "data/input_source.h"

namespace sb {

std::span<const EnumName<InputSource>> enum_names(InputSource) {
  static constexpr EnumName<InputSource> names[] = {{InputSource::Device, "device"}, {InputSource::Host, "host"}};
  return names;
}

}  // namespace sb

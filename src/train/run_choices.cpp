#include "train/run_choices.h"

namespace sb {

std::span<const EnumName<Device>> enum_names(Device) {
  static constexpr EnumName<Device> names[] = {{Device::Cpu, "cpu"}, {Device::Cuda, "cuda"}, {Device::Auto, "auto"}};
  return names;
}

std::span<const EnumName<Precision>> enum_names(Precision) {
  static constexpr EnumName<Precision> names[] = {
      {Precision::FP32, "fp32"}, {Precision::TF32, "tf32"}, {Precision::FP16, "fp16"}, {Precision::BF16, "bf16"}};
  return names;
}

std::span<const EnumName<Layout>> enum_names(Layout) {
  static constexpr EnumName<Layout> names[] = {{Layout::NHWC, "nhwc"}, {Layout::NCHW, "nchw"}};
  return names;
}

std::span<const EnumName<Scaling>> enum_names(Scaling) {
  static constexpr EnumName<Scaling> names[] = {{Scaling::Weak, "weak"}, {Scaling::Strong, "strong"}};
  return names;
}

DType compute_dtype(Precision precision) {
  switch (precision) {
    case Precision::FP16: return DType::F16;
    case Precision::BF16: return DType::BF16;
    case Precision::FP32:
    case Precision::TF32: return DType::F32;
  }
  return DType::F32;
}

}  // namespace sb

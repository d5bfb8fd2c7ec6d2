// The named choices of a training run that are not the optimizer's or the schedule's: the device, the
// compute precision, the activation layout and the scaling mode. Each is an enum parsed once on the
// command line (train/train_options.h), with its names in one table (core/enum_names.h).
#pragma once
#include <span>

#include "core/dtype.h"
#include "core/enum_names.h"

namespace sb {

enum class Device { Cpu, Cuda, Auto };  // Auto: chosen from the machine (train/device_choice.h)
enum class Precision { FP32, TF32, FP16, BF16 };  // TF32: fp32 storage, TF32 tensor-core matmuls
enum class Scaling { Strong, Weak };

std::span<const EnumName<Device>> enum_names(Device);        // cpu, cuda, auto
std::span<const EnumName<Precision>> enum_names(Precision);  // fp32, tf32, fp16, bf16
std::span<const EnumName<Layout>> enum_names(Layout);        // nhwc, nchw: the --layout spelling
std::span<const EnumName<Scaling>> enum_names(Scaling);      // weak, strong

// The dtype the layers compute and store activations in (TF32 computes in fp32 storage).
DType compute_dtype(Precision precision);

}  // namespace sb

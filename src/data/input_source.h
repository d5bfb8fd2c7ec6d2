// Where a CUDA run keeps its training data and builds its batches (--input): `device` uploads the data set
// once and one kernel builds each batch on the GPU; `host` keeps the data set in host memory, worker
// threads build each batch into host buffers and a copy stream uploads it. Both build the same bits.
#pragma once
#include <span>

#include "core/enum_names.h"

namespace sb {

enum class InputSource { Device, Host };

std::span<const EnumName<InputSource>> enum_names(InputSource);  // device, host

}  // namespace sb

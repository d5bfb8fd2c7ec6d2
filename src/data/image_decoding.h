// How a run decodes image files (--decode) and what a file that fails to decode does (--bad-images).
#pragma once
#include <span>

#include "core/enum_names.h"

namespace sb {

// cpu: libjpeg-turbo and libpng in the --workers threads of each rank, into pinned buffers; gpu: the
// workers read the files and nvJPEG decodes each batch on the GPU (its JPEG engines where it has them).
enum class ImageDecoding { Cpu, Gpu };
// fail: the first file that can't be read or decoded ends the job, naming it and the rank; skip: its row
// takes the next sample of the split that decodes (data/bad_image_substitute.h), and the run counts it.
enum class BadImages { Fail, Skip };

std::span<const EnumName<ImageDecoding>> enum_names(ImageDecoding);  // cpu, gpu
std::span<const EnumName<BadImages>> enum_names(BadImages);          // fail, skip

}  // namespace sb

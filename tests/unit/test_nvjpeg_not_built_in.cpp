// A CUDA build without nvJPEG (tests/CMakeLists.txt builds this test only there) says so: no decoder is
// made, and the refusal names nvJPEG and the way out.
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "data/cuda/nvjpeg_decoder.h"

namespace sb {
namespace {

TEST(NvjpegNotBuiltIn, TheDecoderRefusesToBeMadeWithAUserError) {
  EXPECT_FALSE(nvjpeg_built_in());
  try {
    NvjpegBatchDecoder decoder(4, 1'000'000, nullptr);
    FAIL() << "a decoder was made in a build without nvJPEG";
  } catch (const UserError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("built without nvJPEG"), std::string::npos) << message;
    EXPECT_NE(message.find("nvjpeg.h and libnvjpeg"), std::string::npos) << message;
    EXPECT_NE(message.find("--decode cpu"), std::string::npos) << message;
  }
  EXPECT_THROW(nvjpeg_device_backend(), UserError);
}

}  // namespace
}  // namespace sb

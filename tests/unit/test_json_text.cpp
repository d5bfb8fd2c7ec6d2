// The JSON string literals of config_json: quotes, backslashes and control characters escaped.
#include <gtest/gtest.h>

#include "core/json_text.h"

namespace sb {
namespace {

TEST(JsonText, QuotesEscapesAndControlCharacters) {
  EXPECT_EQ(json_quote(""), "\"\"");
  EXPECT_EQ(json_quote("mnist:/data/fashion"), "\"mnist:/data/fashion\"");
  EXPECT_EQ(json_quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(json_quote(std::string("x\ny\t\x01", 5)), "\"x\\u000ay\\u0009\\u0001\"");
  EXPECT_EQ(json_quote("caf\xc3\xa9"), "\"caf\xc3\xa9\"");  // UTF-8 passes through
}

}  // namespace
}  // namespace sb

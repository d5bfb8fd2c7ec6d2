// The sentences errors end a job with name the failing rank once: a message that already begins with
// "rank R: " (an image file's decoding error, say) loses that prefix before "error on rank R (HOST): ".
#include <gtest/gtest.h>

#include "core/error.h"

namespace sb {
namespace {

TEST(ErrorSentences, AMessageNamingItsOwnRankLosesThePrefix) {
  EXPECT_EQ(without_rank_prefix("rank 1: image a.jpg can't be decoded", 1), "image a.jpg can't be decoded");
  EXPECT_EQ(without_rank_prefix("rank 0: x", 0), "x");
}

TEST(ErrorSentences, OtherMessagesStayAsTheyAre) {
  EXPECT_EQ(without_rank_prefix("rank 1: x", 0), "rank 1: x");  // another rank's words are kept
  EXPECT_EQ(without_rank_prefix("rank 12: x", 1), "rank 12: x");
  EXPECT_EQ(without_rank_prefix("rank 1's tar shards", 1), "rank 1's tar shards");
  EXPECT_EQ(without_rank_prefix("unexpected error: rank 1: x", 1), "unexpected error: rank 1: x");
  EXPECT_EQ(without_rank_prefix("", 0), "");
}

}  // namespace
}  // namespace sb

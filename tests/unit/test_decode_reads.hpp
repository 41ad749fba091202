// Shared assertion of the decoder tests: one read's pointer, element type and extent.
#pragma once
#include <gtest/gtest.h>

#include "decode/written.hpp"

namespace decode_test {

inline void expect_read(const nanscope::decode::Decoded& d, uint32_t i, uint64_t ptr, nanscope::DType dt,
                        uint64_t elements) {
  ASSERT_LT(i, d.read_count);
  EXPECT_EQ(d.reads[i], ptr) << "read " << i;
  EXPECT_EQ(d.read_dtypes[i], dt) << "read " << i;
  EXPECT_EQ(d.read_elements[i], elements) << "read " << i;
}

}  // namespace decode_test

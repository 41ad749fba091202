// Shapes and UIDs of the synthetic SDPA the cuDNN tests build (tests/unit/test_cudnn_*.cpp).
#pragma once
#include <cstdint>
#include <vector>

namespace cudnn_fixture {

constexpr int64_t B = 2, H = 4, S = 128, D = 64;
// PyTorch's UIDs (aten/src/ATen/native/cudnn/MHA.cpp): Q, K, V, O, BIAS, SCALE, SEED, OFFSET, LSE.
enum : int64_t { kQ = 0, kK = 1, kV = 2, kO = 3, kBias = 4, kScale = 5, kLse = 8 };
const std::vector<int64_t> kBhsd = {B, H, S, D}, kDense = {H * S * D, S * D, D, 1};
constexpr uint64_t kPtrQ = 0xa0000, kPtrK = 0xb0000, kPtrV = 0xc0000, kPtrO = 0xd0000, kPtrLse = 0xe0000;
constexpr uint64_t kHostScale = 0x7ffd0000;  // a by-value scalar: the frontend's host copy

}  // namespace cudnn_fixture

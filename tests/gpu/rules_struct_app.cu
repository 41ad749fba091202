// A kernel whose output pointer and seq_lens hide inside a struct parameter, as in real
// attention kernels (Flash_fwd_params and friends). Only a rules file (NANSCOPE_RULES) tells
// nanscope where they are; tests/gpu/rules_struct.json does. Padding rows get 0/0.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

struct DecodeParams {
  int rows;                  // offset 0
  int row_elements;          // offset 4
  const float* scale;        // offset 8
  __nv_bfloat16* out;        // offset 16
  const int* seq_lens;       // offset 24
};

__global__ void struct_decode(DecodeParams p) {
  const int row = blockIdx.x;
  const float len = static_cast<float>(p.seq_lens[row]);
  for (int i = threadIdx.x; i < p.row_elements; i += blockDim.x)
    p.out[(size_t)row * p.row_elements + i] = __float2bfloat16(*p.scale * len / len);  // 0/0 when len == 0
}

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) return 77;
  static_assert(offsetof(DecodeParams, out) == 16 && offsetof(DecodeParams, seq_lens) == 24, "layout");
  const int rows = 6, row_elements = 1500;
  std::vector<int> seq = {3, 0, 7, 0, 0, 2};
  DecodeParams p{rows, row_elements, nullptr, nullptr, nullptr};
  float one = 1.f;
  cudaMalloc(&p.out, rows * row_elements * 2);
  cudaMalloc((void**)&p.seq_lens, rows * sizeof(int));
  cudaMalloc((void**)&p.scale, sizeof(float));
  cudaMemcpy((void*)p.seq_lens, seq.data(), rows * sizeof(int), cudaMemcpyHostToDevice);
  cudaMemcpy((void*)p.scale, &one, sizeof(float), cudaMemcpyHostToDevice);
  struct_decode<<<rows, 256>>>(p);
  if (cudaDeviceSynchronize() != cudaSuccess) return 1;
  std::printf("rules_struct_app: done\n");
  return 0;
}

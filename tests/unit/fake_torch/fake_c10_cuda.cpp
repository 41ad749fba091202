// Stands in for torch's libc10_cuda.so in the loader tests: the same soname and the one symbol
// the loader looks up (c10::cuda::CUDACachingAllocator::allocator) to find its directory.
namespace c10::cuda::CUDACachingAllocator {
__attribute__((visibility("default"))) void* allocator = nullptr;
}  // namespace c10::cuda::CUDACachingAllocator

#pragma once
namespace nanscope {
// Marks the calling thread as running nanscope's own driver calls, so the CUPTI callback
// ignores the launches and allocations the tool itself makes.
class ToolScope {
 public:
  ToolScope() { ++depth_; }
  ~ToolScope() { --depth_; }
  ToolScope(const ToolScope&) = delete;
  ToolScope& operator=(const ToolScope&) = delete;
  static bool active() { return depth_ > 0; }

 private:
  static inline thread_local int depth_ = 0;
};
}  // namespace nanscope

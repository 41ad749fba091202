// Lock ranks: the lock order of hooks/engine.hpp as types, checked at run time in debug builds
// (NDEBUG unset, or NANSCOPE_LOCK_RANKS=1 as .ci/sanitize builds). A thread holding a lock takes
// only locks of a later level; taking one of its own level or an earlier one is reported with
// both names and aborts: it is the order that keeps two threads from deadlocking each other, and
// a debug build is where it must fail loudly. Release builds compile the checks out (the wrapper
// then only forwards), so the injected library pays nothing.
//
//   Ranked<std::mutex, LockLevel::part> mu_{"KernelTable::mu_"};
//   std::lock_guard lock(mu_);   // CTAD: the std:: lock types take it as they take the mutex
//
// try_lock never blocks, so it cannot close a cycle: it is recorded when it succeeds (what the
// thread then takes is checked against it) but never reported itself (the fatal-signal flush
// only try-locks, in whatever state the thread was interrupted).
#pragma once
#include <cstdint>

#ifndef NANSCOPE_LOCK_RANKS
#ifdef NDEBUG
#define NANSCOPE_LOCK_RANKS 0
#else
#define NANSCOPE_LOCK_RANKS 1
#endif
#endif

namespace nanscope {

// hooks/engine.hpp states what each level holds.
enum class LockLevel : uint8_t { drain = 1, contexts = 2, part = 3, container = 4 };

namespace lock_rank {

inline constexpr bool kChecked = NANSCOPE_LOCK_RANKS != 0;

// The locks one thread holds, in the order taken: pure, so a CPU test reaches every case.
class HeldLocks {
 public:
  static constexpr uint32_t kMax = 16;  // deeper than any path of the engine (4 levels)
  struct Held {
    const void* lock = nullptr;
    const char* name = nullptr;
    LockLevel level{};
  };
  // The lock that forbids taking `level` (one of the same or a later level already held), or
  // null when taking it keeps the order.
  const Held* conflict(LockLevel level) const;
  // Records a lock taken; false when the stack is full (not recorded: the checks then miss it).
  bool push(const void* lock, const char* name, LockLevel level);
  // Forgets `lock`, wherever it is (a unique_lock may release out of order).
  void pop(const void* lock);
  uint32_t depth() const { return depth_; }

 private:
  Held held_[kMax];
  uint32_t depth_ = 0;
};

// The calling thread's held locks.
HeldLocks& this_thread();
// Says which lock was held and which was taken, on stderr, then aborts (a debug build's assert).
[[noreturn]] void report_violation(const HeldLocks::Held& held, const char* taking, LockLevel level);

inline void before_lock(const char* name, LockLevel level) {
  if (const HeldLocks::Held* h = this_thread().conflict(level)) report_violation(*h, name, level);
}

}  // namespace lock_rank

// A mutex (or shared mutex) with its level and name. Shared and exclusive ownership rank alike:
// a shared lock taken twice on one thread deadlocks once a writer waits between the two.
template <class Mutex, LockLevel Level>
class Ranked {
 public:
  explicit constexpr Ranked(const char* name) : name_(name) {}
  Ranked(const Ranked&) = delete;
  Ranked& operator=(const Ranked&) = delete;

  void lock() {
    checked_before();
    mu_.lock();
    checked_after();
  }
  bool try_lock() { return mu_.try_lock() ? (checked_after(), true) : false; }
  void unlock() {
    checked_release();
    mu_.unlock();
  }
  void lock_shared() {
    checked_before();
    mu_.lock_shared();
    checked_after();
  }
  bool try_lock_shared() { return mu_.try_lock_shared() ? (checked_after(), true) : false; }
  void unlock_shared() {
    checked_release();
    mu_.unlock_shared();
  }

 private:
  void checked_before() const {
    if constexpr (lock_rank::kChecked) lock_rank::before_lock(name_, Level);
  }
  void checked_after() {
    if constexpr (lock_rank::kChecked) lock_rank::this_thread().push(this, name_, Level);
  }
  void checked_release() {
    if constexpr (lock_rank::kChecked) lock_rank::this_thread().pop(this);
  }

  Mutex mu_;
  const char* name_;
};

}  // namespace nanscope

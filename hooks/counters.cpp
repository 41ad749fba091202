#include "counters.hpp"

#include <fmt/format.h>

namespace nanscope {

void warn_once(EventLog& log, schema::Once what, const std::string& message) {
  if (log.first_time(what)) log.warning(schema::once_name(what), message);
}

std::string error_name(CUresult r) {
  const char* s = nullptr;
  cuGetErrorName(r, &s);
  return s ? s : fmt::format("CUresult {}", static_cast<int>(r));
}

void ScanFailures::report(CUresult r, bool captured) {
  counters_.dropped.fetch_add(1, std::memory_order_relaxed);
  if (captured && r == CUDA_ERROR_OUT_OF_MEMORY)
    warn_once(log_, schema::Once::captured_scans,
              fmt::format("NANSCOPE_MAX_CAPTURED_SCANS={} reached: later kernels captured into graphs "
                          "are not scanned (counted as scans_dropped)",
                          cfg_.max_captured_scans));
  else
    warn_once(log_, schema::Once::scan_launch,
              fmt::format("a scan could not be launched or added to a graph ({}); such scans are skipped and "
                          "counted as scans_dropped",
                          error_name(r)));
}

}  // namespace nanscope

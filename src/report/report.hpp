// `nanscope report`: turns nanscope/1 JSONL logs into the first cause, leak points, per-kernel
// tables, CI gating, JSON / Chrome-trace / HTML outputs and tensor-dump inspection.
#pragma once

namespace nanscope::report {

// argv[0] is "report"; the rest are the report's arguments. Returns the process exit code:
// 0 ok, 1 when --fail-on triggers, 2 for empty/missing input or usage errors.
int run(int argc, char** argv);

}  // namespace nanscope::report

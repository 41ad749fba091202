#pragma once
namespace nanscope::cli {
// `nanscope [options] [--] app args...`: sets NANSCOPE_* and the injection variables, then
// execs the app, so its exit code is the launcher's.
int run_launcher(int argc, char** argv);
}

// `nanscope`: run a program under nanscope, or `nanscope report` its logs.
#include <cstring>

#include "cli/launcher.hpp"
#include "report/report.hpp"

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "report") == 0) return nanscope::report::run(argc - 1, argv + 1);
  return nanscope::cli::run_launcher(argc, argv);
}

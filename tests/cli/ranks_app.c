/* One rank of the fake multi-process job (test_ranks.sh): attaches nanscope as a linked
 * program would (the start event is written without a GPU) and prints the variables the
 * launcher set, as this child inherited them. */
#include <stdio.h>
#include <stdlib.h>

#include "nanscope/nanscope.h"

int main(void) {
  const char* injection = getenv("CUDA_INJECTION64_PATH");
  const char* log = getenv("NANSCOPE_LOG");
  printf("rank=%s injection=%s log=%s\n", getenv("RANK") ? getenv("RANK") : "?", injection ? injection : "",
         log ? log : "");
  nanscope_init();
  nanscope_flush();
  return 0;
}

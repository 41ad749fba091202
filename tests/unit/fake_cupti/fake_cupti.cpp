// Stands in for libcupti.so.13 in the CUPTI loader's tests: the three entry points nanscope
// binds, built with the real soname so that "already loaded" is tested the way torch loads it.
#include <cupti.h>

extern "C" {
__attribute__((visibility("default"))) CUptiResult cuptiSubscribe(CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*) {
  return CUPTI_ERROR_NOT_INITIALIZED;
}
__attribute__((visibility("default"))) CUptiResult cuptiEnableCallback(uint32_t, CUpti_SubscriberHandle,
                                                                       CUpti_CallbackDomain, CUpti_CallbackId) {
  return CUPTI_SUCCESS;
}
__attribute__((visibility("default"))) CUptiResult cuptiGetResultString(CUptiResult, const char** str) {
  *str = "fake CUPTI";
  return CUPTI_SUCCESS;
}
}

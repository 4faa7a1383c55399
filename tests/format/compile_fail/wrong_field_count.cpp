// Must not compile: ibv_post_send has five fields, this call gives four. The ctest
// recorder.wrong_field_count_does_not_compile expects the recorder's static_assert message.
#include "profiler/runtime/recorder.h"

void post(uint64_t qpn) {
  using namespace sigmatrace;
  profiler::record<format::EventType::ibv_post_send>(qpn, uint64_t{1}, uint64_t{64}, uint64_t{1});
}

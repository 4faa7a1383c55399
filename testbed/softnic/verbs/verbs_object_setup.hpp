// What the object constructors of softnic's libibverbs share (verbs_resource_exports.cpp,
// verbs_qp_exports.cpp): queue sizes as the hardware rounds them, the locks objects embed.
#pragma once
#include <pthread.h>

#include <cstdint>

namespace softnic {

// Work queues and CQs have power-of-two depths, as on a ConnectX: the capacities reported back
// are rounded up.
inline uint32_t round_pow2(uint32_t v) {
  uint32_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

inline void init_sync(pthread_mutex_t* m, pthread_cond_t* c) {
  pthread_mutex_init(m, nullptr);
  pthread_cond_init(c, nullptr);
}

}  // namespace softnic

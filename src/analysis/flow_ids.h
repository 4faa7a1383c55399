// Flow ids: the arrows of the timeline. Every id is computed by each end alone (no events are
// exchanged between files), from what both ends know; 0 means "no flow".
#pragma once
#include <cstdint>

namespace sigmatrace::analysis {

// The splitmix64 finaliser: the one mixing step every flow id of the analysis is built from.
inline uint64_t splitmix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The arrow from a work request to the completion that reported it: both records carry the op id.
inline uint64_t completion_flow_id(uint64_t op_id) {
  uint64_t h = splitmix64(op_id ^ 0xc0ffee0123456789ull);
  return h ? h : 1;
}

}  // namespace sigmatrace::analysis

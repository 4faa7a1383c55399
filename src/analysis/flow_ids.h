// Flow ids: the arrows of the timeline. Every id is computed by each end alone (no events are
// exchanged between files), from what both ends know after the first pass; 0 means "no flow".
//
// The ids are opaque, but their bytes are not free: trace.pftrace stores each as a fixed64, which
// deflate shrinks only where its bytes repeat, and trace.sqlite stores a small integer in fewer
// bytes. So the ids of the verbs layer, the most numerous by far, are small and structured; the
// other layers' are hashes. The three kinds never meet:
//   a message on a QP pair:   (sending qp_id + 1) << 40 | k       below 2^62
//   a WR to its completion:   1 << 62 | op_id                     op_id = process_id << 40 | n: below 2^62
//                                                                 for experiments of under 4 M processes
//   hashed (other layers):    a splitmix64 mix with bit 63 set
#pragma once
#include <cstdint>

namespace sigmatrace::analysis {

// The splitmix64 finaliser: the mixing step of every hashed id of the analysis.
inline uint64_t splitmix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// A hashed flow id: bit 63 set, so it is never one of the structured ids below.
inline uint64_t hashed_flow_id(uint64_t h) { return h | (uint64_t{1} << 63); }

// The arrow from a work request to the completion that reported it: both records carry the op id.
inline uint64_t completion_flow_id(uint64_t op_id) { return (uint64_t{1} << 62) | op_id; }

// The k-th (from 1) message that consumes a receive, sent on QP `sender_qp_id` to its peer QP:
// the sender counts its sends, the receiver its receive completions, and both know the sending
// QP's id (the receiver's QP names it as its remote QP).
inline uint64_t message_flow_id(uint64_t sender_qp_id, uint64_t k) {
  constexpr uint64_t kSeqBits = 40, kQpLimit = uint64_t{1} << (62 - kSeqBits);
  if (sender_qp_id + 1 < kQpLimit && k < (uint64_t{1} << kSeqBits)) return (sender_qp_id + 1) << kSeqBits | k;
  return hashed_flow_id(splitmix64(splitmix64(sender_qp_id + 0x9e3779b97f4a7c15ull) ^ k));  // beyond the ranges
}

}  // namespace sigmatrace::analysis

// State shared by gda's host setup and its device functions (plain data, in GPU memory).
#pragma once
#include <cstdint>

#include "mlx5/common.hpp"

namespace gda {

constexpr int kMaxPes = 8;

// What the GPU threads posted on one QP, by kind (what a traced run's recovered WQEs must
// match exactly): WQEs and payload bytes, and a sum of wqe_digest over every WQE, which covers
// each one's remote address without listing them.
enum PostedKind : uint32_t { kPostedWrite = 0, kPostedRead = 1, kPostedFetchAdd = 2, kPostedKinds = 3 };
struct Posted {
  uint64_t wqes[kPostedKinds];
  uint64_t bytes[kPostedKinds];
  uint64_t digest;
};
// One WQE's contribution: its mlx5 opcode, payload bytes and offset in the target PE's heap.
MLX5_HD uint64_t wqe_digest(uint8_t opcode, uint64_t bytes, uint64_t heap_offset) {
  uint64_t z = (uint64_t(opcode) << 56) ^ (bytes << 40) ^ heap_offset;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// One RC send queue as GPU threads drive it (cf. NVSHMEM's device QP descriptor).
struct QpDev {
  uint8_t* sq;          // WQEBB ring (GPU or mapped host memory, umem-registered)
  uint32_t nwqes;       // WQEBBs in the ring (power of two)
  uint32_t qpn;
  uint32_t* dbrec;      // SQ counter word of the doorbell record (DBR + 4)
  uint64_t* bf;         // device mapping of the UAR doorbell register
  uint8_t* cqe;         // collapsed CQ: entry 0
  uint64_t prod;        // WQEBBs posted (index of the next free one)
  uint64_t cons;        // WQEBBs known complete
  uint32_t error;       // first error: CQE syndrome, or 0x100 + reason for a local timeout
  uint32_t pad;
  Posted posted;
};

// The symmetric heap: every PE allocates the same size; offsets name the same object everywhere.
// The first kHeapReserved bytes are gda's own (barrier flags, fetch results).
constexpr uint64_t kBarrierOff = 0;                    // 8 bytes per PE
constexpr uint64_t kFetchOff = 512;                    // 8 bytes per PE: atomic fetch results
constexpr uint64_t kScratchOff = 1024;                 // 8 bytes per PE: put8 staging (unused)
constexpr uint64_t kHeapReserved = 4096;

// The first device-side wait of a PE that gave up: which wait, on which QP, at which index, and
// what it saw. Filled by the device, printed by the host (describe_failure in gda.hpp), so that
// a lost completion or a silent peer is named instead of hanging the test.
struct WaitFailure {
  uint32_t kind;          // kErrTimeout* (0: no failure)
  int32_t peer;           // PE the wait concerned (-1: a local flag)
  uint32_t qpn;           // QP towards peer (0: none)
  uint32_t cqe_word;      // CQE bytes 60..63 of the QP's CQ as last read
  uint64_t prod, cons;    // WQEBBs posted / known complete on that QP
  uint64_t heap_off;      // wait_eq / barrier: the flag's heap offset
  uint64_t expected;      // the value waited for (wait_eq: equal, barrier: at least)
  uint64_t observed;      // the value last seen
  uint64_t waited_ns;
};

struct DeviceState {
  int pe;
  int npes;
  uint8_t* heap;             // local heap (device pointer; equals its registered address)
  uint64_t heap_bytes;
  uint32_t lkey;             // host order (WQE builders convert)
  uint32_t pad;
  uint64_t remote_heap[kMaxPes];
  uint32_t rkey[kMaxPes];
  QpDev qp[kMaxPes];         // qp[pe]: towards pe (none towards itself)
  uint64_t barrier_epoch;
  uint64_t timeout_ns;       // bound on every device-side wait except barriers (0: 10 s)
  uint64_t barrier_timeout_ns;  // bound on a barrier's wait for its peers (0: 60 s)
  WaitFailure failure;       // the first wait that timed out
};

// Error codes of device waits (QpDev::error values above 0xff).
constexpr uint32_t kErrTimeoutSlot = 0x101;
constexpr uint32_t kErrTimeoutCq = 0x102;
constexpr uint32_t kErrTimeoutWait = 0x103;
constexpr uint32_t kErrTimeoutBarrier = 0x104;

}  // namespace gda

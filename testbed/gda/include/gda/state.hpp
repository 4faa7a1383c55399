// State shared by gda's host setup and its device functions (plain data, in GPU memory).
#pragma once
#include <cstdint>

namespace gda {

constexpr int kMaxPes = 8;

// One RC send queue as GPU threads drive it (cf. NVSHMEM's device QP descriptor).
struct QpDev {
  uint8_t* sq;          // WQEBB ring (GPU memory, umem-registered)
  uint32_t nwqes;       // WQEBBs in the ring (power of two)
  uint32_t qpn;
  uint32_t* dbrec;      // SQ counter word of the doorbell record (DBR + 4)
  uint64_t* bf;         // device mapping of the UAR doorbell register
  uint8_t* cqe;         // collapsed CQ: entry 0
  uint64_t prod;        // WQEBBs posted (index of the next free one)
  uint64_t cons;        // WQEBBs known complete
  uint32_t error;       // first error: CQE syndrome, or 0x100 + reason for a local timeout
  uint32_t pad;
};

// The symmetric heap: every PE allocates the same size; offsets name the same object everywhere.
// The first kHeapReserved bytes are gda's own (barrier flags, fetch results).
constexpr uint64_t kBarrierOff = 0;                    // 8 bytes per PE
constexpr uint64_t kFetchOff = 512;                    // 8 bytes per PE: atomic fetch results
constexpr uint64_t kScratchOff = 1024;                 // 8 bytes per PE: put8 staging (unused)
constexpr uint64_t kHeapReserved = 4096;

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
  uint64_t timeout_ns;       // bound on every device-side wait (0: 10 s)
};

// Error codes of device waits (QpDev::error values above 0xff).
constexpr uint32_t kErrTimeoutSlot = 0x101;
constexpr uint32_t kErrTimeoutCq = 0x102;
constexpr uint32_t kErrTimeoutWait = 0x103;

}  // namespace gda

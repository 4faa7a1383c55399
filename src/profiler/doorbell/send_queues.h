// The send queues of this process's devx QPs, as CREATE_QP placed them: where the ring lies, its
// size, and which memory (and CUDA context) holds it. The devx provider adds and removes them;
// WQE recovery (wqe_recovery.h) looks a QP up when its first doorbell is seen, and then checks
// with one atomic load per doorbell that the QP is still the one it looked up (a QPN reused by a
// new QP is a new queue, starting at index 0).
#pragma once
#include <atomic>
#include <cstdint>

#include "format/event_types.h"

namespace sigmatrace::profiler::doorbell {

struct SendQueue {
  uintptr_t device_context = 0;  // the ibv_context it was created on: QP numbers are per device
  uint32_t qpn = 0;
  bool dc_initiator = false;     // a DCI: its WQEs carry the target's address vector
  uint32_t log_wqebbs = 0;     // log_sq_size: the ring holds 2^log_wqebbs 64-byte WQEBBs
  uint64_t addr = 0;           // first WQEBB: a host address, or a device pointer of gpu
  format::SqMemory memory = format::SqMemory::unknown;
  int64_t gpu = -1;
  uintptr_t cu_context = 0;    // the CUDA context the device memory belongs to
  uint32_t uar_page = 0;       // the UAR page it was created on (QPs of one page share its registers)
  // Its doorbell record (the SQ counter the writer stores before it rings): where, in which memory.
  uint64_t dbr_addr = 0;
  format::SqMemory dbr_memory = format::SqMemory::unknown;
  uintptr_t dbr_cu_context = 0;
};

// A looked-up queue: which table entry, and its generation then (see still_current).
struct SendQueueRef {
  uint32_t entry = 0;
  uint32_t generation = 0;
};

// On the control path (devx CREATE_QP, the application's thread): with WQE recovery of a queue
// in GPU memory, the pinned staging its recovery will copy to is made ready here (reused from a
// destroyed queue's, or allocated), never on a poller thread.
void add_send_queue(const SendQueue& sq);
void remove_send_queue(uintptr_t device_context, uint32_t qpn);
// The application ends a CUDA context: queues (and doorbell records) in its memory are not
// read any more. Returns how many queues were in it.
// Pinned staging allocated in it goes with it: freed first when alive, otherwise only forgotten.
uint32_t forget_queues_of_context(uintptr_t cu_context, bool alive);
// The staging made ready for ref's queue, handed over once (null: none; the caller then makes its
// own), with the CUDA context it was allocated in (pinned memory goes when its context does).
// The taker gives it back with give_back_staging, for a later queue.
void* take_staging(const SendQueueRef& ref, size_t bytes, uintptr_t* context);
void give_back_staging(void* staging, size_t bytes, uintptr_t context);
// The live queue of qpn on the device; false if none is known.
bool find_send_queue(uintptr_t device_context, uint32_t qpn, SendQueue* out, SendQueueRef* ref);
// Whether ref's queue is still live (not destroyed, its QPN not reused). Lock-free.
bool still_current(const SendQueueRef& ref);
// Bumped by every add and remove (lock-free): a poller refreshes what it derived from the table.
uint64_t send_queues_version();
// The live queues created on UAR page uar_page of the device, at most max of them; their number.
int send_queues_on_uar(uintptr_t device_context, uint32_t uar_page, SendQueue* out, int max);

}  // namespace sigmatrace::profiler::doorbell

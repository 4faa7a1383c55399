// When kernels really ran. A launch is recorded when it is queued; a stream may hold several
// kernels queued at once (gda's barrier, put, barrier), so the last launch before a doorbell is
// not necessarily the kernel that rang it. While GPU doorbells are hijacked, the profiler records
// one CUDA event on the launch's stream right after each launch: it completes when the kernel
// does. The doorbell pollers ask about it between doorbells, and record cuda_kernel_seen_end
// when they find it complete: the kernel ended between the last look that found it running and
// that one. The event has no timing: a timed event (the GPU stamping its completion) slowed each
// GPU-initiated operation by 1-4 us on an H100 under MPS; untimed events with the pollers' looks
// add 0.4-1.4 us (docs/performance-log/gpu-forwarding.md, "What in the kernel markers costs" and "Forwarding with
// untimed markers and without"). SIGMATRACE_KERNEL_MARKERS
// =timed records timed events instead, whose time on the GPU's event clock, matched to a host TSC
// reading (a reference event recorded and synchronised on a stream of the profiler's own), gives
// cuda_kernel_end. The analysis then knows each kernel's span on its stream: from its launch, or
// its predecessor's end, to its own end.
//
// Never on the NULL / legacy / per-thread default stream (an event there would order the
// application's other streams against it), never on a stream being captured into a graph, and
// not at all without a hijacked doorbell page. Control path: one mutex.
#pragma once
#include <cstdint>

#include "profiler/gpu/cuda_abi.h"
#include "profiler/runtime/config.h"

namespace sigmatrace::profiler::cuda {

// SIGMATRACE_KERNEL_MARKERS (set once, by configure_doorbells): off, no launch is marked.
void enable_kernel_markers(KernelMarkers mode);
KernelMarkers kernel_markers_mode();

// In the launch wrappers, after a successful launch stamped launch_tsc, while a doorbell page is
// hijacked (the caller asks doorbell::doorbells_hijacked(): this layer is below the doorbell
// subsystem and does not know of it). True if a marker was
// recorded (its cuda_kernel_seen_end, or cuda_kernel_end when timed, will follow once the kernel
// finished and a poller looked).
bool mark_kernel_end(uint64_t launch_tsc, uintptr_t function, CUstream stream, int64_t device);

// Records the end of every marker whose kernel finished, and gives its event back: on a
// doorbell poller thread, and once at exit on the exiting thread (the calling thread's current
// context is left as it was). Returns at once when another thread is resolving.
void resolve_kernel_markers();
// Whether any marker waits to be resolved (lock-free).
bool kernel_markers_pending();

// The application ends context (alive: not yet; its events and the profiler's stream in it are
// destroyed first, otherwise only forgotten): its markers of finished kernels are resolved while
// it is alive, the others dropped and counted. Returns how many were dropped.
uint64_t forget_context_markers(uintptr_t context, bool alive);

// At exit (after the pollers' last reports): records cuda_kernel_markers if any launch was
// marked, so that markers lost or unresolved are accounted.
void report_kernel_markers();

}  // namespace sigmatrace::profiler::cuda

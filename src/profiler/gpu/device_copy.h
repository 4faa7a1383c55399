// Device-to-host copies for WQE recovery: one dedicated non-blocking stream in the CUDA context
// that owns a send queue, so that the copies run on a copy engine next to the application's
// kernels (which may run forever) and never wait for, or make wait, the application's streams.
// The driver functions are the real ones, resolved from the libcuda the program loaded; the
// profiler never loads CUDA itself. Used by doorbell poller threads only.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace sigmatrace::profiler::cuda {

// The CUDA context that owns device memory at addr (0 if none, or no driver).
uintptr_t memory_context(uint64_t addr);
// The calling thread's current context (0 if none).
uintptr_t current_context();
// Makes the calling thread's CUDA calls never disturb another thread's stream capture
// (cuThreadExchangeStreamCaptureMode RELAXED): for the profiler's own threads.
void relax_stream_capture_on_this_thread();

// Makes no context current on the calling thread if context is (it is about to end).
void leave_context(uintptr_t context);

// Pinned host memory the copy engines can write to (null on failure).
void* alloc_pinned(size_t bytes);
void free_pinned(void* p);

// What a thread does while it waits for its copies (a doorbell poller forwards doorbells).
struct WhileWaiting {
  void (*fn)(void*) = nullptr;
  void* arg = nullptr;
};

class DeviceCopyStream {
 public:
  // Creates the stream in context (made current on the calling thread). False with *why.
  bool open(uintptr_t context, std::string* why);
  // Enqueues a copy of bytes at device address src to dst (pinned). False if it could not be.
  bool copy(void* dst, uint64_t src, size_t bytes);
  // Returns once every copy enqueued so far is done; false if the stream reported an error. It
  // asks the stream without blocking in the driver, and calls while_waiting between the asks.
  bool wait(const WhileWaiting& while_waiting = {});
  void close();
  // Its context is gone: the stream went with it; nothing is asked of the driver.
  void abandon() { stream_ = nullptr, context_ = 0; }
  uintptr_t context() const { return context_; }

 private:
  bool make_current();
  uintptr_t context_ = 0;
  void* stream_ = nullptr;
};

}  // namespace sigmatrace::profiler::cuda

// See seal_pipeline.h.
#include "profiler/runtime/seal_pipeline.h"

#include <signal.h>

namespace sigmatrace::profiler {

void* SealPipeline::thread_main(void* arg) {
  pthread_setname_np(pthread_self(), "sigmatrace-seal");
  auto* w = static_cast<Worker*>(arg);
  for (;;) {
    // Sleeps until the writer queues a chunk (from idle, or from done before the writer has
    // taken the last result back).
    for (uint32_t s; (s = w->state.load(std::memory_order_acquire)) != queued;) w->state.wait(s, std::memory_order_acquire);
    Job& j = w->job;
    // Numbered 0 here: the writer gives the chunk its place in the file when it writes it.
    j.sealed = w->sealer.seal(j.raw, j.raw_bytes, j.tid, 0, j.codec, 1, &j.out);
    w->state.store(done, std::memory_order_release);
    w->state.notify_one();
  }
  return nullptr;
}

bool SealPipeline::start(uint32_t threads, size_t chunk_bytes) {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);  // never the application's signal handlers
  bool ok = true;
  for (uint32_t i = 0; ok && i < threads; ++i) {
    auto w = std::make_unique<Worker>();
    w->sealer.reserve(chunk_bytes);
    ok = pthread_create(&w->thread, nullptr, &SealPipeline::thread_main, w.get()) == 0;
    if (ok) workers_.push_back(std::move(w));
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (!ok) {
    // The threads started so far wait for work that never comes; they are left to process exit
    // (a detached wait costs nothing), and the writer seals on its own.
    for (auto& w : workers_) {
      pthread_detach(w->thread);
      static_cast<void>(w.release());  // still referenced by its thread
    }
    workers_.clear();
  }
  return ok;
}

void SealPipeline::submit(const Job& job) {
  Worker& w = *workers_[(oldest_ + in_flight_) % workers_.size()];
  w.job = job;
  ++in_flight_;
  w.state.store(queued, std::memory_order_release);
  w.state.notify_one();
}

SealPipeline::Job& SealPipeline::wait_oldest() {
  Worker& w = *workers_[oldest_];
  w.state.wait(queued, std::memory_order_acquire);
  return w.job;
}

void SealPipeline::release_oldest() {
  workers_[oldest_]->state.store(idle, std::memory_order_relaxed);
  oldest_ = (oldest_ + 1) % workers_.size();
  --in_flight_;
}

bool SealPipeline::on_sealing_thread() const {
  for (const auto& w : workers_)
    if (pthread_equal(pthread_self(), w->thread)) return true;
  return false;
}

}  // namespace sigmatrace::profiler

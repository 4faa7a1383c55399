// See pipeline.h.
#include "analysis/pipeline.h"

#include <algorithm>
#include <thread>

namespace sigmatrace::analysis {

namespace {
// Hands every record to several sinks (e.g. Perfetto and SQLite at once).
class FanoutSink : public FileSink {
 public:
  explicit FanoutSink(std::vector<std::unique_ptr<FileSink>> s) : s_(std::move(s)) {}
  void call(const CallRecord& r) override { for (auto& s : s_) s->call(r); }
  void work_request(const OpRecord& r) override { for (auto& s : s_) s->work_request(r); }
  void op(const OpRecord& r) override { for (auto& s : s_) s->op(r); }
  void completion(const CompletionRecord& r) override { for (auto& s : s_) s->completion(r); }
  void error(const ErrorRecord& r) override { for (auto& s : s_) s->error(r); }
  void mark(const MarkRecord& r) override { for (auto& s : s_) s->mark(r); }
  void doorbell(const DoorbellRecord& r) override { for (auto& s : s_) s->doorbell(r); }
  void launch(const LaunchRecord& r) override { for (auto& s : s_) s->launch(r); }
  void range(const RangeRow& r) override { for (auto& s : s_) s->range(r); }
  void gpu_op(const OpRecord& r, const GpuWqeRecord& w) override { for (auto& s : s_) s->gpu_op(r, w); }
  void finish() override { for (auto& s : s_) s->finish(); }

 private:
  std::vector<std::unique_ptr<FileSink>> s_;
};
}  // namespace

SecondPassResult run_second_pass(const ExperimentModel& model, const std::vector<ExperimentSink*>& sinks, Aggregates* aggregates,
                                 unsigned threads, Progress* progress, const std::vector<bool>* only) {
  SecondPassResult r;
  r.files.resize(model.processes.size());
  std::vector<uint32_t> order;
  for (uint32_t i = 0; i < model.processes.size(); ++i)
    if (!only || (i < only->size() && (*only)[i])) order.push_back(i);
  const size_t n = order.size();
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads = std::min<unsigned>(threads, static_cast<unsigned>(std::max<size_t>(1, n)));
  // Largest files first: the pass ends with the last file, so a big one should not start last.
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return model.processes[a].file->file_bytes > model.processes[b].file->file_bytes;
  });
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      for (size_t k; (k = next.fetch_add(1)) < n;) {
        uint32_t pid = order[k];
        std::vector<std::unique_ptr<FileSink>> file_sinks;
        for (ExperimentSink* s : sinks) file_sinks.push_back(s->open_file(pid));
        std::unique_ptr<FileSink> sink;
        if (file_sinks.size() == 1) sink = std::move(file_sinks.front());
        else if (file_sinks.size() > 1) sink = std::make_unique<FanoutSink>(std::move(file_sinks));
        r.files[pid] = associate_file(model, pid, sink.get(), aggregates, progress ? &progress->bytes_done : nullptr);
      }
    });
  for (std::thread& t : pool) t.join();
  for (const FilePassStats& f : r.files) r.events += f.events;
  return r;
}

}  // namespace sigmatrace::analysis

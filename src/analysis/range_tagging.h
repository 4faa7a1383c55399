// Puts each operation of a file in its NVTX range on its way to the exporters, and counts what
// each range holds (operations, bytes, and kernel launches). Sits between the associators and the
// file's sink: the layers (ibv, ucx, ofi, gpu) build their records as before; an operation whose
// layer already knew its range (a GPU-initiated one: where its kernel was launched) keeps it.
#pragma once
#include <cstdint>
#include <vector>

#include "analysis/experiment_model.h"
#include "analysis/records.h"

namespace sigmatrace::analysis {

struct RangeTraffic {
  uint64_t ops = 0, bytes = 0, launches = 0;
};

class RangeTagger : public FileSink {
 public:
  // next: the exporters' sink (null: aggregates only); traffic: one entry per range of process.
  RangeTagger(const ProcessRow& process, FileSink* next, std::vector<RangeTraffic>* traffic);
  void call(const CallRecord& r) override { if (next_) next_->call(r); }
  void work_request(const OpRecord& r) override;
  void op(const OpRecord& r) override;
  void completion(const CompletionRecord& r) override { if (next_) next_->completion(r); }
  void error(const ErrorRecord& r) override { if (next_) next_->error(r); }
  void mark(const MarkRecord& r) override { if (next_) next_->mark(r); }
  void doorbell(const DoorbellRecord& r) override { if (next_) next_->doorbell(r); }
  void launch(const LaunchRecord& r) override;
  void range(const RangeRow& r) override { if (next_) next_->range(r); }
  void gpu_op(const OpRecord& op, const GpuWqeRecord& w) override;
  void finish() override { if (next_) next_->finish(); }

 private:
  // The range index of an operation of this thread at ts_ns. An operation's work request and its
  // final record ask in turn (Simple mode: at once): the last answer is kept for its op_id.
  // An operation of an NCCL task already has its call's range (nccl_tasks.h), and keeps it.
  int64_t range_of(const OpRecord& r);
  void count(int64_t index, uint64_t ops, uint64_t bytes);
  const ProcessRow& process_;
  FileSink* next_;
  std::vector<RangeTraffic>* traffic_;
  uint64_t last_op_ = ~uint64_t{0};
  int64_t last_index_ = -1;
};

}  // namespace sigmatrace::analysis

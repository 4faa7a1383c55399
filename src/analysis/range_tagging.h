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
  int64_t tag(int64_t thread, int64_t ts_ns, int64_t known) const;  // range index, or -1
  int64_t id_of(int64_t index) const { return index < 0 ? -1 : static_cast<int64_t>(process_.ranges.rows()[static_cast<size_t>(index)].range_id); }
  const ProcessRow& process_;
  FileSink* next_;
  std::vector<RangeTraffic>* traffic_;
};

}  // namespace sigmatrace::analysis

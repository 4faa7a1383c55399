// See range_tagging.h.
#include "analysis/range_tagging.h"

namespace sigmatrace::analysis {

RangeTagger::RangeTagger(const ProcessRow& process, FileSink* next, std::vector<RangeTraffic>* traffic)
    : process_(process), next_(next), traffic_(traffic) {
  traffic_->assign(process_.ranges.rows().size(), RangeTraffic{});
  if (next_)
    for (const RangeRow& r : process_.ranges.rows()) next_->range(r);
}

int64_t RangeTagger::range_of(const OpRecord& r) {
  if (r.op_id != last_op_)
    last_op_ = r.op_id, last_index_ = r.range_id >= 0 ? ProcessRanges::index(r.range_id) : process_.ranges.at(r.thread_id, r.ts_ns);
  return last_index_;
}

void RangeTagger::count(int64_t index, uint64_t ops, uint64_t bytes) {
  if (index < 0) return;
  RangeTraffic& c = (*traffic_)[static_cast<size_t>(index)];
  c.ops += ops, c.bytes += bytes;
}

void RangeTagger::work_request(const OpRecord& r) {
  if (!next_) return;
  OpRecord t = r;
  t.range_id = process_.ranges.id(range_of(r));
  next_->work_request(t);
}

void RangeTagger::op(const OpRecord& r) {
  OpRecord t = r;
  const int64_t index = range_of(r);
  t.range_id = process_.ranges.id(index);
  count(index, r.wr_count, r.bytes);
  if (next_) next_->op(t);
}

void RangeTagger::gpu_op(const OpRecord& op, const GpuWqeRecord& w) {
  // Its range is its kernel's launch's, set by the GPU layer (its thread is the poller's).
  count(ProcessRanges::index(op.range_id), 1, op.bytes);
  if (next_) next_->gpu_op(op, w);
}

void RangeTagger::launch(const LaunchRecord& r) {
  LaunchRecord t = r;
  const int64_t index = process_.ranges.at(r.thread_id, r.ts_ns);
  t.range_id = process_.ranges.id(index);
  if (index >= 0) ++(*traffic_)[static_cast<size_t>(index)].launches;
  if (next_) next_->launch(t);
}

}  // namespace sigmatrace::analysis

// See range_tagging.h.
#include "analysis/range_tagging.h"

namespace sigmatrace::analysis {

RangeTagger::RangeTagger(const ProcessRow& process, FileSink* next, std::vector<RangeTraffic>* traffic)
    : process_(process), next_(next), traffic_(traffic) {
  traffic_->assign(process_.ranges.rows().size(), RangeTraffic{});
  if (next_)
    for (const RangeRow& r : process_.ranges.rows()) next_->range(r);
}

int64_t RangeTagger::tag(int64_t thread, int64_t ts_ns, int64_t known) const {
  if (known >= 0) return static_cast<int64_t>(static_cast<uint64_t>(known) & ((uint64_t{1} << 40) - 1));
  return process_.ranges.at(thread, ts_ns);
}

void RangeTagger::work_request(const OpRecord& r) {
  if (!next_) return;
  OpRecord t = r;
  t.range_id = id_of(tag(r.thread_id, r.ts_ns, r.range_id));
  next_->work_request(t);
}

void RangeTagger::op(const OpRecord& r) {
  OpRecord t = r;
  const int64_t index = tag(r.thread_id, r.ts_ns, r.range_id);
  t.range_id = id_of(index);
  if (index >= 0) {
    RangeTraffic& c = (*traffic_)[static_cast<size_t>(index)];
    c.ops += r.wr_count, c.bytes += r.bytes;
  }
  if (next_) next_->op(t);
}

void RangeTagger::gpu_op(const OpRecord& op, const GpuWqeRecord& w) {
  // Its range is its kernel's launch's, set by the GPU layer (its thread is the poller's).
  OpRecord t = op;
  const int64_t index = op.range_id >= 0 ? tag(op.thread_id, op.ts_ns, op.range_id) : -1;
  t.range_id = id_of(index);
  if (index >= 0) {
    RangeTraffic& c = (*traffic_)[static_cast<size_t>(index)];
    ++c.ops, c.bytes += op.bytes;
  }
  if (next_) next_->gpu_op(t, w);
}

void RangeTagger::launch(const LaunchRecord& r) {
  LaunchRecord t = r;
  const int64_t index = process_.ranges.at(r.thread_id, r.ts_ns);
  t.range_id = id_of(index);
  if (index >= 0) ++(*traffic_)[static_cast<size_t>(index)].launches;
  if (next_) next_->launch(t);
}

}  // namespace sigmatrace::analysis

// GPU-initiated work in the second pass (layer "gpu"): the doorbells each GPU rang, the
// operations recovered from its send queues (docs/gpu-doorbells.md), the kernels it ran, and the
// doorbell hijack's set-up, of one file. Each recovered WQE becomes an op row with the doorbell
// that announced it, its GPU, the kernel running, and its peer — the peer QP's process from the
// QP topology, or else the process that registered the memory its rkey names. Integrity counts
// (recovered, lost, damaged, unread WQEs) go to the QP's DoorbellCounters.
#pragma once
#include <cstdint>
#include <unordered_map>

#include "analysis/aggregates.h"
#include "analysis/experiment_model.h"
#include "analysis/qp_lookup.h"
#include "analysis/records.h"
#include "analysis/call_spans.h"
#include "format/chunk_codec.h"

namespace sigmatrace::analysis {

class GpuAssociation {
 public:
  // op_seq: the file's operation counter (op ids are unique per process across layers);
  // qp_of: the file's QP lookup; calls: where its control calls go to get their duration.
  GpuAssociation(const ExperimentModel& m, uint32_t process_id, FileSink* sink, Aggregates* agg, uint64_t* op_seq,
                 QpLookup* qp_of, CallSpans* calls);
  // The gpu_*, cuda_* and devx_* events; false for any other type.
  bool on_event(int64_t thread, int64_t ts, const format::DecodedEvent& ev);
  // Aggregate-mode entries of the GPU keys; false for other keys.
  bool on_aggregate(const format::DecodedEvent& ev);

 private:
  void doorbell(int64_t ts, const format::DecodedEvent& ev);
  void wqe(int64_t ts, const format::DecodedEvent& ev);
  void wqe_stats(const format::DecodedEvent& ev);
  void launch(int64_t thread, int64_t ts, const format::DecodedEvent& ev);
  void control(int64_t thread, int64_t ts, const format::DecodedEvent& ev);
  void call(int64_t thread, int64_t ts, const char* name, int64_t qp, int64_t result);
  DoorbellCounters& doorbell_counters(int64_t qp);
  OpCounters& op_counters(int64_t qp);
  int64_t peer_of(int64_t qp, uint64_t rkey, uint64_t raddr);
  uint64_t next_id(uint64_t* n) const { return (uint64_t{p_.process_id} << 40) | (*n)++; }

  const ExperimentModel& m_;
  const ProcessRow& p_;
  FileSink* sink_;
  Aggregates* agg_;
  ProcessCounters& pc_;
  uint64_t* op_seq_;
  QpLookup& qp_of_;
  CallSpans& calls_;
  uint64_t doorbell_seq_ = 0, launch_seq_ = 0;
  std::unordered_map<int64_t, uint64_t> last_doorbell_;  // per QP: the doorbell its next WQEs belong to
  std::unordered_map<uint64_t, int64_t> peer_by_rkey_;   // rkey -> process that registered it (or kNone)
};

}  // namespace sigmatrace::analysis

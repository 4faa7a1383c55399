// Second pass over one file (association): streams its events chunk by chunk, maps every timestamp
// to the shared timeline, and hands each event to the associator of its layer (layer_associator.h,
// associator_list.h): the verbs layer associates work requests with their completions and sends
// that consume a receive with the peer's receive completion, by per-connection sequence number
// (the k-th such send on a QP and the k-th successful receive completion on its peer QP get the
// same flow id, derived from the sending QP's id and k (flow_ids.h), so each side computes it alone:
// no events are exchanged between files); the GPU and UCX/libfabric layers do the same for theirs.
// It fills the file's counters in Aggregates and hands records to the sink (exports).
#pragma once
#include <atomic>
#include <cstdint>

#include "analysis/aggregates.h"
#include "analysis/experiment_model.h"
#include "analysis/flow_ids.h"
#include "analysis/records.h"

namespace sigmatrace::analysis {

struct FilePassStats {
  uint64_t events = 0;
  uint64_t chunks = 0;
  uint64_t undecodable_chunks = 0;
  uint64_t skipped_events = 0;  // known types whose layout in this file is older than ours
};

// Analyses process_id's file. sink may be null (aggregates only). Thread-safe across different
// processes: writes only the counters of this process and its QPs.
FilePassStats associate_file(const ExperimentModel& model, uint32_t process_id, FileSink* sink, Aggregates* aggregates,
                             std::atomic<uint64_t>* bytes_done);

}  // namespace sigmatrace::analysis

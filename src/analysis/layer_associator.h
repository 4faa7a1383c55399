// The second pass over one file is shared out among layer associators, the way Perfetto's trace
// processor shares a trace among its importers. Each layer (ibv, gpu, ucx/ofi) registers one
// (associator_list.h) with the event ids it reads (event_types.h gives each provider family its
// own hundred) and the aggregate-mode keys it folds; the file loop (association.cpp) hands it
// those events of the file, in file order, and nothing else. Adding a layer is one associator
// and one registration line: the file loop and the other layers do not change.
#pragma once
#include <cstdint>
#include <memory>
#include <span>

#include "analysis/aggregates.h"
#include "analysis/call_spans.h"
#include "analysis/experiment_model.h"
#include "analysis/qp_lookup.h"
#include "analysis/records.h"
#include "format/chunk_codec.h"
#include "format/event_types.h"

namespace sigmatrace::analysis {

// What the associators of one file share. A file is one process's, analysed by one thread: its
// associators write only this process's counters and its QPs' (agg.qp[...]).
struct FileContext {
  const ExperimentModel& model;
  const ProcessRow& process;
  FileSink* sink;             // null: aggregates only
  Aggregates& agg;
  ProcessCounters& counters;  // agg.process[process.process_id]
  QpLookup& qp_of;            // a data-path event's QP number at its time -> QP id
  CallSpans& calls;           // control calls, held until their duration is known
  uint64_t op_seq = 0;        // verbs and GPU operations share one id sequence per process
  uint64_t next_op_id() { return process_scoped_id(&op_seq); }
  // Ids are unique in the experiment: the process in the top bits, a per-process sequence below.
  uint64_t process_scoped_id(uint64_t* seq) const { return (uint64_t{process.process_id} << 40) | (*seq)++; }
  // Operation counts of a QP, or of the process for operations on no known QP.
  OpCounters& op_counters(int64_t qp) { return qp == kNone ? counters.ops : agg.qp[static_cast<size_t>(qp)]; }
};

class LayerAssociator {
 public:
  virtual ~LayerAssociator() = default;
  // One event of the ids it registered, its timestamp already on the experiment's timeline.
  virtual void on_event(int64_t thread, int64_t ts_ns, const format::DecodedEvent& ev) = 0;
  // One aggregate-mode entry of the keys it registered.
  virtual void on_aggregate(const format::DecodedEvent&) {}
  // The end of the file: what is still pending (operations whose completion never came) is
  // handed over, and the file's totals are published.
  virtual void finish() {}
};

struct EventIdRange {
  uint16_t first, last;  // inclusive
  bool holds(uint16_t id) const { return id >= first && id <= last; }
};

struct AssociatorRegistration {
  const char* layers;  // what it associates: "ibv", "gpu", "ucx,ofi"
  std::span<const EventIdRange> events;
  std::span<const format::AggregateKey> aggregate_keys;
  std::unique_ptr<LayerAssociator> (*make)(FileContext& file);
};

}  // namespace sigmatrace::analysis

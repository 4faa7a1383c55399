// `sigmatrace merge DIR`: the shards an analysis was cut into (shards.h) made one, as the analysis
// of the whole experiment writes it:
// - aggregate.json: the shards' raw counters added up, then rolled up and reported as usual;
// - trace.pftrace: the shards' files one after the other (a Perfetto trace is a sequence of
//   packets; the shards' sequences and tracks are distinct, and their flows join up);
// - trace.sqlite: the shards' per-event rows copied as stored into one database's pages (no
//   row is decoded or inserted one by one), the small tables through SQLite, the model's tables
//   and the roll-ups written afresh.
// The first pass runs again, for the model; the second (association) does not.
#pragma once
#include <string>

#include "analysis_run/analysis_run.h"

namespace sigmatrace::exporter {

struct MergeOptions {
  std::string dir;
  unsigned threads = 0;  // 0: all cores
  analysis::Progress* progress = nullptr;
};

// ok false with a one-line error when a shard is missing, comes from another experiment or
// another cut, or an output cannot be written.
AnalysisRun merge_shards(const MergeOptions& o);

}  // namespace sigmatrace::exporter

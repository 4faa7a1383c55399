// Processes that ended before the rest of the job (aggregate.json's "ended_early"; docs/hangs.md):
// killed or crashed without a final record, or ended by a signal or a crash the profiler saw. For
// each, when its trace ends, how many processes went on, and the failed completions the others got
// on their QPs to it (a NIC reports a vanished peer as transport retries exhausted): a rank that
// dies mid-collective is named, not left to be inferred from the others' errors.
#pragma once
#include <nlohmann/json.hpp>

#include "analysis/aggregates.h"
#include "analysis/experiment_model.h"

namespace sigmatrace::exporter {

nlohmann::json ended_early_json(const analysis::ExperimentModel& m, const analysis::Aggregates& agg);

}  // namespace sigmatrace::exporter

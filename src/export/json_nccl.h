// NCCL's calls in aggregate.json (docs/aggregate-json.md): per process, how its verbs operations
// found their NCCL call; per kind of call (function, size, algorithm, protocol), what the calls put
// on the wire against what the algorithm moves, and how long their network parts took.
#pragma once
#include <nlohmann/json.hpp>

#include "analysis/aggregates.h"
#include "analysis/experiment_model.h"

namespace sigmatrace::exporter {

// null when the process ran no NCCL task.
nlohmann::json nccl_process_json(const analysis::ProcessRow& p, const analysis::ProcessCounters& c);
nlohmann::json nccl_calls_json(const analysis::ExperimentModel& m, const analysis::Aggregates& agg);

}  // namespace sigmatrace::exporter

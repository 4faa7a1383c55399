// aggregate.json: operations and bytes per QP, process (rank), device and host, the rank x rank and
// host x host communication matrices, imbalance, errors, drops, damage and coverage
// (docs/aggregate-json.md). `sigmatrace report` prints its summary from this file alone.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "analysis/aggregates.h"
#include "analysis/experiment_model.h"
#include "analysis/pipeline.h"

namespace sigmatrace::exporter {

nlohmann::json aggregates_to_json(const analysis::ExperimentModel& model, const analysis::Aggregates& agg,
                                  const analysis::SecondPassResult& pass);
bool write_json_file(const std::string& path, const nlohmann::json& j, std::string* error);

}  // namespace sigmatrace::exporter

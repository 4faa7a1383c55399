// UCX and libfabric traffic in aggregate.json ("layers": one entry per source process, peer,
// layer and transport/provider) and its section of `sigmatrace report`.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "analysis/aggregates.h"
#include "analysis/experiment_model.h"

namespace sigmatrace::exporter {

nlohmann::json layer_traffic_json(const analysis::ExperimentModel& m, const analysis::Aggregates& agg);
std::string render_layer_report(const nlohmann::json& aggregate);  // "" when the experiment has none

}  // namespace sigmatrace::exporter

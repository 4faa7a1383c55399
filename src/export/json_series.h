// aggregate.json's "series": the binned series of analysis/series.h rolled up per host and layer,
// per GPU and for the QPs that moved the most bytes, with the duration histograms per operation
// kind and the doorbells per kernel (docs/aggregate-json.md). The HTML report plots these.
#pragma once
#include <nlohmann/json.hpp>

#include "analysis/aggregates.h"
#include "analysis/experiment_model.h"

namespace sigmatrace::exporter {

nlohmann::json series_json(const analysis::ExperimentModel& m, const analysis::Aggregates& agg);

}  // namespace sigmatrace::exporter

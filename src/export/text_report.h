// The text summary printed by `sigmatrace analyze` and `sigmatrace report`, rendered from the
// aggregate JSON (so both print the same thing): top connections and QPs by bytes, the host
// matrix, imbalance, errors, dropped events, damage and provider coverage.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace sigmatrace::exporter {

std::string render_text_report(const nlohmann::json& aggregate, size_t top = 10);

}  // namespace sigmatrace::exporter

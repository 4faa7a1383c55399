// report.html: one self-contained page per analysed experiment, built in the browser from its
// aggregate.json (embedded, less the lists no figure uses) by the report's script with the vendored ECharts (both inlined):
// it opens offline, from any file system, with no server (docs/report.md).
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace sigmatrace::report {

inline constexpr const char* kReportFile = "report.html";

std::string render_html_report(const nlohmann::json& aggregate);
// Writes the page to path (through a temporary file renamed into place); false with a one-line
// error when it cannot.
bool write_html_report(const std::string& path, const nlohmann::json& aggregate, std::string* error);

}  // namespace sigmatrace::report

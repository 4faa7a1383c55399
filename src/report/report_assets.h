// The files a report.html inlines, compiled into the binary (report_assets.cpp): the vendored
// ECharts release, the report's script and its style sheet. A report needs no file beside the
// sigmatrace command, wherever it was copied.
#pragma once
#include <string_view>

namespace sigmatrace::report {

std::string_view echarts_js();
std::string_view report_js();
std::string_view report_css();

}  // namespace sigmatrace::report

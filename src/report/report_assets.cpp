// See report_assets.h. Each file is taken in whole by the assembler (.incbin) at build time, with
// its path from CMake (src/report/CMakeLists.txt), and bounded by two symbols.
#include "report/report_assets.h"

#define SIGMATRACE_EMBED(name, path)                                   \
  asm(".section .rodata\n"                                            \
      ".balign 16\n"                                                  \
      "sigmatrace_asset_" #name "_begin:\n"                           \
      ".incbin \"" path "\"\n"                                        \
      "sigmatrace_asset_" #name "_end:\n"                             \
      ".previous\n");                                                 \
  extern "C" const char sigmatrace_asset_##name##_begin[] asm("sigmatrace_asset_" #name "_begin"); \
  extern "C" const char sigmatrace_asset_##name##_end[] asm("sigmatrace_asset_" #name "_end");

SIGMATRACE_EMBED(echarts, SIGMATRACE_ECHARTS_JS)
SIGMATRACE_EMBED(report_js, SIGMATRACE_REPORT_JS)
SIGMATRACE_EMBED(report_css, SIGMATRACE_REPORT_CSS)

namespace sigmatrace::report {
namespace {
std::string_view span(const char* b, const char* e) { return {b, static_cast<size_t>(e - b)}; }
}  // namespace

std::string_view echarts_js() { return span(sigmatrace_asset_echarts_begin, sigmatrace_asset_echarts_end); }
std::string_view report_js() { return span(sigmatrace_asset_report_js_begin, sigmatrace_asset_report_js_end); }
std::string_view report_css() { return span(sigmatrace_asset_report_css_begin, sigmatrace_asset_report_css_end); }

}  // namespace sigmatrace::report

// `sigmatrace report --plots DIR`: every figure of a report.html as DIR/<figure>.svg and
// DIR/<figure>.png, for papers and slides. The figures are drawn by the same script and library
// as the page: a headless Chromium opens the report with #export, which renders each figure to
// SVG and to a PNG, and prints them into the page (report.js); this reads them from the DOM
// Chromium dumps.
#pragma once
#include <string>
#include <vector>

namespace sigmatrace::report {

// The browser: $SIGMATRACE_CHROMIUM, else chromium, chromium-browser, google-chrome or
// google-chrome-stable on PATH. "" with a one-line error naming what was looked for.
std::string find_chromium(std::string* error);

struct PlotsExport {
  std::vector<std::string> files;  // written: each figure's svg then png, figures by name
};

// html: the report.html to draw (an absolute or relative path); dir is created if needed.
bool export_plots(const std::string& html, const std::string& dir, PlotsExport* out, std::string* error);

// What export_plots reads back (exposed for tests): the JSON text of <pre id="sigmatrace-export">
// in a dumped DOM, with its HTML entities decoded; false if the page has no such element.
bool extract_export_json(const std::string& dom, std::string* json);
// The bytes of a base64 data URL ("data:image/png;base64,..."); false if it is not one.
bool decode_data_url(const std::string& url, std::string* bytes);

}  // namespace sigmatrace::report

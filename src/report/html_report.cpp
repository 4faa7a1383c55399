// See html_report.h.
#include "report/html_report.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "report/report_assets.h"

namespace sigmatrace::report {
namespace {

// JSON inside a <script> element: "</script" would end it whatever the quoting, and "<!--"
// changes how it is parsed. In JSON a '<' can only be inside a string, where \u003c is the same
// character: none is left. (The inlined scripts contain neither: tests/report checks them.)
std::string script_safe_json(std::string_view json) {
  std::string out;
  out.reserve(json.size() + 64);
  for (char c : json) {
    if (c == '<') out += "\\u003c";
    else out += c;
  }
  return out;
}

std::string html_escaped(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// What the page draws from: aggregate.json without its per-QP, per-connection, per-device and
// per-layer-pair lists, which grow with the job (a 256-rank all-to-all has 130 560 QPs: 115 MB of
// JSON) and which no figure uses; how many each held is kept.
nlohmann::json page_data(const nlohmann::json& aggregate) {
  nlohmann::json data = aggregate;
  nlohmann::json left_out = nlohmann::json::object();
  for (const char* key : {"qps", "connections", "devices", "layers"}) {
    auto it = data.find(key);
    if (it == data.end()) continue;
    left_out[key] = it->is_array() ? it->size() : 1;
    data.erase(it);
  }
  data["left_out_of_page"] = left_out;
  return data;
}

}  // namespace

std::string render_html_report(const nlohmann::json& aggregate) {
  // Labels come from traces (host names, kernel names): invalid UTF-8 is replaced, not fatal.
  const std::string data = page_data(aggregate).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string page;
  page.reserve(echarts_js().size() + data.size() + report_js().size() + 4096);
  page += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  page += "<meta name=\"generator\" content=\"sigmatrace\">\n<title>sigmatrace report: " +
          html_escaped(aggregate.value("experiment", std::string())) + "</title>\n<style>\n";
  page += report_css();
  page += "</style>\n</head>\n<body>\n<div id=\"report\"></div>\n";
  page += "<noscript>This report is drawn by JavaScript (Apache ECharts, inlined): enable it, or read aggregate.json.</noscript>\n";
  page += "<script type=\"application/json\" id=\"sigmatrace-aggregate\">" + script_safe_json(data) + "</script>\n";
  page += "<script>\n";
  page += echarts_js();
  page += "\n</script>\n<script>\n";
  page += report_js();
  page += "\n</script>\n</body>\n</html>\n";
  return page;
}

bool write_html_report(const std::string& path, const nlohmann::json& aggregate, std::string* error) {
  const std::string page = render_html_report(aggregate);
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out || !out.write(page.data(), static_cast<std::streamsize>(page.size())) || !out.flush()) {
      *error = "cannot write " + tmp + ": " + std::strerror(errno);
      std::remove(tmp.c_str());
      return false;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    *error = "cannot rename " + tmp + " to " + path + ": " + std::strerror(errno);
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

}  // namespace sigmatrace::report

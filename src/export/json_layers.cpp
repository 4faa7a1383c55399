// See json_layers.h.
#include "export/json_layers.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "analysis/aggregates.h"
#include "analysis/layer_ops.h"

namespace sigmatrace::exporter {

using nlohmann::json;
using namespace sigmatrace::analysis;

json layer_traffic_json(const ExperimentModel& m, const Aggregates& agg) {
  json a = json::array();
  for (const LayerTraffic& t : layer_traffic(agg)) {
    json e = {{"layer", t.layer}, {"transport", t.transport}, {"src_process_id", t.src}, {"ops", t.ops}, {"bytes", t.bytes}};
    e["src"] = t.src < m.processes.size() ? process_label(m.processes[t.src]) : "?";
    if (t.dst >= 0 && static_cast<size_t>(t.dst) < m.processes.size()) {
      e["dst_process_id"] = t.dst;
      e["dst"] = process_label(m.processes[static_cast<size_t>(t.dst)]);
    } else {
      e["dst_process_id"] = nullptr;
      e["dst"] = "unknown";
    }
    a.push_back(e);
  }
  return a;
}

std::string render_layer_report(const json& a) {
  if (!a.contains("layers") || !a["layers"].is_array() || a["layers"].empty()) return "";
  std::vector<json> rows(a["layers"].begin(), a["layers"].end());
  std::sort(rows.begin(), rows.end(), [](const json& x, const json& y) { return x.value("bytes", uint64_t{0}) > y.value("bytes", uint64_t{0}); });
  std::string out = "\nUCX / libfabric traffic (layer, transport or provider, source -> destination):\n";
  char line[512];
  for (const json& r : rows) {
    std::snprintf(line, sizeof line, "  %-4s %-16.16s %-14.14s -> %-14.14s %14" PRIu64 " B %10" PRIu64 " ops\n",
                  r.value("layer", "").c_str(), r.value("transport", "").empty() ? "?" : r.value("transport", "").c_str(),
                  r.value("src", "").c_str(), r.value("dst", "").c_str(), r.value("bytes", uint64_t{0}), r.value("ops", uint64_t{0}));
    out += line;
  }
  return out;
}

}  // namespace sigmatrace::exporter

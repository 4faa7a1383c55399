// See timeline_selection.h.
#include "export/timeline_selection.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace sigmatrace::exporter {

unsigned call_layer_bit(const char* name) {
  if (std::strncmp(name, "ucp_", 4) == 0 || std::strncmp(name, "uct_", 4) == 0) return kLayerUcx;
  if (std::strncmp(name, "fi_", 3) == 0) return kLayerOfi;
  if (std::strncmp(name, "cu", 2) == 0) return kLayerGpu;
  return kLayerIbv;
}

namespace {
bool parse_seconds(const std::string& s, std::optional<double>* out) {
  if (s.empty()) return true;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(v)) return false;
  *out = v;
  return true;
}
}  // namespace

bool parse_time_window(const std::string& text, TimelineRequest* r) {
  const size_t colon = text.find(':');
  if (colon == std::string::npos || text.find(':', colon + 1) != std::string::npos) return false;
  std::optional<double> from, to;
  if (!parse_seconds(text.substr(0, colon), &from) || !parse_seconds(text.substr(colon + 1), &to)) return false;
  if (!from && !to) return false;
  r->from_s = from, r->to_s = to;
  return true;
}

bool parse_rank_list(const std::string& text, std::vector<long>* ranks) {
  if (text.empty() || text.back() == ',') return false;
  std::stringstream ss(text);
  std::string item;
  bool any = false;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    const long a = std::strtol(item.c_str(), &end, 10);
    if (end == item.c_str() || a < 0) return false;
    long b = a;
    if (*end == '-') {
      const char* second = end + 1;
      b = std::strtol(second, &end, 10);
      if (end == second || b < a) return false;
    }
    if (*end) return false;
    for (long k = a; k <= b; ++k) ranks->push_back(k);
    any = true;
  }
  return any;
}

bool resolve_timeline_selection(const TimelineRequest& r, const analysis::ExperimentModel& m, TimelineSelection* out, std::string* error) {
  TimelineSelection s;
  const double span_s = static_cast<double>(m.end_ns - m.start_ns) / 1e9;
  if (r.from_s) s.from_ns = m.start_ns + static_cast<int64_t>(std::llround(*r.from_s * 1e9));
  if (r.to_s) s.to_ns = m.start_ns + static_cast<int64_t>(std::llround(*r.to_s * 1e9));
  if (s.from_ns > s.to_ns || (r.from_s && *r.from_s > span_s) || (r.to_s && *r.to_s < 0)) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "--window selects nothing: the experiment spans 0 to %.6f s", span_s);
    *error = buf;
    return false;
  }
  for (const std::string& l : r.layers) {
    if (std::find(std::begin(analysis::kLayerNames), std::end(analysis::kLayerNames), l) == std::end(analysis::kLayerNames)) {
      *error = "--layers: unknown layer '" + l + "' (ibv, gpu, ucx, ofi)";
      return false;
    }
    if (&l == &r.layers.front()) s.layers = 0;
    s.layers |= timeline_layer_bit(l.c_str());
  }
  s.process.assign(m.processes.size(), true);
  for (long rank : r.ranks)
    if (std::none_of(m.processes.begin(), m.processes.end(), [&](const analysis::ProcessRow& p) { return p.rank == rank; })) {
      *error = "--ranks: the experiment has no rank " + std::to_string(rank);
      return false;
    }
  for (const std::string& h : r.hosts)
    if (std::find(m.hosts.begin(), m.hosts.end(), h) == m.hosts.end()) {
      *error = "--hosts: the experiment has no host '" + h + "'";
      return false;
    }
  for (const analysis::ProcessRow& p : m.processes) {
    bool in = r.ranks.empty() || std::find(r.ranks.begin(), r.ranks.end(), p.rank) != r.ranks.end();
    in = in && (r.hosts.empty() || std::find(r.hosts.begin(), r.hosts.end(), p.host) != r.hosts.end());
    s.process[p.process_id] = in;
    if (in) s.selected_events += p.file->events;
  }
  s.budget_events = r.budget_events;
  // The share of the selected events inside the window, assumed spread evenly over the experiment.
  const int64_t lo = std::max(s.from_ns, m.start_ns), hi = std::min(s.to_ns, m.end_ns);
  const double share = m.end_ns > m.start_ns ? std::clamp(static_cast<double>(hi - lo) / static_cast<double>(m.end_ns - m.start_ns), 0.0, 1.0) : 1.0;
  const double in_window = share * static_cast<double>(s.selected_events);
  if (s.budget_events && in_window > static_cast<double>(s.budget_events))
    s.detail_end_ns = lo + static_cast<int64_t>(static_cast<double>(hi - lo) * static_cast<double>(s.budget_events) / in_window);
  s.active = r.from_s || r.to_s || !r.ranks.empty() || !r.hosts.empty() || s.layers != kAllLayers ||
             s.detail_end_ns != std::numeric_limits<int64_t>::max();
  *out = std::move(s);
  return true;
}

}  // namespace sigmatrace::exporter

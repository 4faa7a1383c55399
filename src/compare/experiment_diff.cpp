// See experiment_diff.h.
#include "compare/experiment_diff.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <vector>

namespace sigmatrace::compare {
namespace {

using nlohmann::json;

// What one row holds in one experiment. Durations are those of its operations with a completion.
struct Side {
  double ops = 0, bytes = 0, doorbells = 0, wqes = 0;
  double dur_ops = 0, dur_sum_ns = 0, dur_sum_sq = 0;
  // The sums of the durations' logarithms and of their squares; absent from an aggregate.json
  // written before they were (has_logs false): its durations are compared by their arithmetic mean.
  double dur_sum_log = 0, dur_sum_log_sq = 0;
  bool has_logs = true;
  double active_ns = 0;
  double p50_ns = -1, p99_ns = -1;  // operation kinds only (the duration histograms)
  double mean_ns() const { return dur_ops > 0 ? dur_sum_ns / dur_ops : 0; }
  double variance() const { return dur_ops > 1 ? std::max(0.0, dur_sum_sq / dur_ops - mean_ns() * mean_ns()) : 0; }
  double mean_log() const { return dur_ops > 0 ? dur_sum_log / dur_ops : 0; }
  double variance_log() const { return dur_ops > 1 ? std::max(0.0, dur_sum_log_sq / dur_ops - mean_log() * mean_log()) : 0; }
  double geomean_ns() const { return std::exp(mean_log()); }
  void add_durations(const json& d);
};

double number(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
}

void Side::add_durations(const json& d) {
  dur_ops += number(d, "ops");
  dur_sum_ns += number(d, "sum_ns");
  dur_sum_sq += number(d, "sum_sq_ns2");
  has_logs = has_logs && d.contains("sum_log_ns");
  dur_sum_log += number(d, "sum_log_ns");
  dur_sum_log_sq += number(d, "sum_log_sq");
}

double relative_change(double a, double b) {
  if (a == b) return 0;
  return a == 0 ? std::numeric_limits<double>::infinity() : std::fabs(b - a) / std::fabs(a);
}

// A change of durations, Welch's test on what the two runs' means are of: the durations'
// logarithms where both runs have them (the geometric mean: RDMA operations' durations are
// heavy-tailed, and a few stalls of the machine make the arithmetic mean and its standard
// error as large as a real change), else the durations. The relative change of the mean compared
// (0 when it is within min_z standard errors), and the field that names that mean.
struct DurationChange {
  double relative;
  const char* field;
};
DurationChange duration_change(const Side& a, const Side& b, double min_z) {
  const bool logs = a.has_logs && b.has_logs;
  const char* field = logs ? "geomean_ns" : "mean_ns";
  const double ma = logs ? a.mean_log() : a.mean_ns(), mb = logs ? b.mean_log() : b.mean_ns();
  const double va = logs ? a.variance_log() : a.variance(), vb = logs ? b.variance_log() : b.variance();
  const double se = std::sqrt(va / a.dur_ops + vb / b.dur_ops);
  const double z = se > 0 ? std::fabs(mb - ma) / se : (ma != mb ? std::numeric_limits<double>::infinity() : 0);
  if (z < min_z) return {0, field};
  return {logs ? std::fabs(std::exp(mb - ma) - 1) : relative_change(ma, mb), field};
}

// The groups, in the order they are listed when they explain the same time.
const char* const kGroups[] = {"operation kind", "durations", "process pair", "host pair", "GPU pair", "connection", "kernel"};
using RowKey = std::pair<std::string, std::string>;  // (group, key)
using Rows = std::map<RowKey, Side>;

const json& member(const json& j, const char* key) {
  static const json kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

// Names of processes that hold from run to run: the rank, or the host and the process's order
// on it (by rank, then pid: start order) when there is no rank.
struct ProcessNames {
  std::vector<std::string> by_id;
  std::map<std::string, std::string> by_label;  // a process's label in the matrices -> its name
  std::string of(const json& id) const {
    if (!id.is_number_integer()) return "unknown";
    const auto i = id.get<int64_t>();
    return i >= 0 && static_cast<size_t>(i) < by_id.size() ? by_id[static_cast<size_t>(i)] : "unknown";
  }
  // A GPU's label is its process's label and " GPU n".
  std::string of_gpu_label(const std::string& label) const {
    const size_t at = label.rfind(" GPU ");
    auto it = at == std::string::npos ? by_label.end() : by_label.find(label.substr(0, at));
    return it == by_label.end() ? label : it->second + label.substr(at);
  }
  std::string of_label(const std::string& label) const {
    auto it = by_label.find(label);
    return it == by_label.end() ? label : it->second;
  }
};

ProcessNames process_names(const json& agg) {
  ProcessNames n;
  std::map<std::string, int> seen_on_host;
  std::map<std::string, int> unranked_on_host;
  for (const json& p : member(agg, "processes"))
    if (number(p, "rank") < 0) ++unranked_on_host[p.value("host", "")];
  for (const json& p : member(agg, "processes")) {
    const auto id = static_cast<size_t>(number(p, "process_id"));
    if (n.by_id.size() <= id) n.by_id.resize(id + 1, "unknown");
    const std::string host = p.value("host", "");
    std::string name;
    if (number(p, "rank") >= 0) name = "rank " + std::to_string(static_cast<long>(number(p, "rank")));
    else if (unranked_on_host[host] > 1) name = host + "#" + std::to_string(seen_on_host[host]++);
    else name = host;
    n.by_id[id] = name;
    n.by_label[p.value("label", name)] = name;
  }
  return n;
}

void matrix_rows(Rows* rows, const char* group, const json& m, const std::function<std::string(const std::string&)>& name) {
  const json& labels = member(m, "labels");
  const json& bytes = member(m, "bytes");
  const json& ops = member(m, "ops");
  for (size_t s = 0; s < labels.size(); ++s)
    for (size_t d = 0; d < labels.size(); ++d) {
      const double b = bytes.at(s).at(d).get<double>(), o = ops.at(s).at(d).get<double>();
      if (!b && !o) continue;
      Side& r = (*rows)[{group, name(labels[s].get<std::string>()) + " -> " + name(labels[d].get<std::string>())}];
      r.bytes += b, r.ops += o;
    }
}

Rows rows_of(const json& agg) {
  Rows rows;
  const ProcessNames names = process_names(agg);
  for (const json& p : member(agg, "processes"))
    for (const auto& [opcode, v] : member(p, "by_opcode").items()) {
      Side& r = rows[{"operation kind", opcode}];
      r.ops += number(v, "ops"), r.bytes += number(v, "bytes");
    }
  const json& series = member(agg, "series");
  for (const json& h : member(series, "latency")) {
    Side& r = rows[{"durations", h.value("layer", "") + " " + h.value("opcode", "")}];
    r.ops = number(h, "ops");
    // A receive's duration is its wait for the sender: shown, never taken for a cost.
    if (h.value("opcode", "") == "RECV") {
      r.p50_ns = number(h, "p50_ns"), r.p99_ns = number(h, "p99_ns");
      continue;
    }
    r.dur_ops = r.ops;
    r.dur_sum_ns = h.contains("sum_ns") ? number(h, "sum_ns") : number(h, "mean_ns") * r.dur_ops;
    r.dur_sum_sq = number(h, "sum_sq_ns2");
    r.has_logs = h.contains("sum_log_ns");
    r.dur_sum_log = number(h, "sum_log_ns"), r.dur_sum_log_sq = number(h, "sum_log_sq");
    r.p50_ns = number(h, "p50_ns"), r.p99_ns = number(h, "p99_ns");
  }
  std::map<int64_t, const json*> qp_by_id;
  for (const json& q : member(agg, "qps")) {
    qp_by_id[static_cast<int64_t>(number(q, "qp_id"))] = &q;
    if (!number(q, "ops")) continue;
    Side& r = rows[{"process pair", names.of(member(q, "process_id")) + " -> " + names.of(member(q, "peer_process_id"))}];
    r.ops += number(q, "ops"), r.bytes += number(q, "bytes_out") + number(q, "bytes_read");
    r.active_ns = std::max(r.active_ns, number(q, "active_ns"));
    if (q.contains("durations")) r.add_durations(q["durations"]);
  }
  const json& matrices = member(agg, "matrices");
  matrix_rows(&rows, "host pair", member(matrices, "host"), [](const std::string& l) { return l; });
  matrix_rows(&rows, "GPU pair", member(matrices, "gpu"), [&](const std::string& l) { return names.of_gpu_label(l); });
  std::map<std::string, int> nth;  // connections between the same two processes, in creation order
  for (const json& c : member(agg, "connections")) {
    const json* a = qp_by_id.count(static_cast<int64_t>(number(c, "qp_a"))) ? qp_by_id[static_cast<int64_t>(number(c, "qp_a"))] : nullptr;
    const json* b = qp_by_id.count(static_cast<int64_t>(number(c, "qp_b"))) ? qp_by_id[static_cast<int64_t>(number(c, "qp_b"))] : nullptr;
    if (!a || !b) continue;
    const std::string ends = names.of(member(*a, "process_id")) + " <-> " + names.of(member(*b, "process_id"));
    Side& r = rows[{"connection", ends + " #" + std::to_string(nth[ends]++)}];
    r.bytes = number(c, "bytes");
    for (const json* q : {a, b}) {
      r.ops += number(*q, "ops");
      r.active_ns = std::max(r.active_ns, number(*q, "active_ns"));
      if (q->contains("durations")) r.add_durations((*q)["durations"]);
    }
  }
  for (const json& k : member(series, "kernels")) {
    const json& name = member(k, "kernel_name");
    const std::string kernel = name.is_string() ? name.get<std::string>() : "(no launch seen)";
    Side& r = rows[{"kernel", kernel + " on " + names.of_gpu_label(k.value("gpu_label", ""))}];
    r.doorbells += number(k, "doorbells"), r.wqes += number(k, "wqes");
    for (const json& t : member(k, "to_peers")) r.ops += number(t, "ops"), r.bytes += number(t, "bytes");
    r.active_ns = std::max(r.active_ns, number(k, "last_ns") - number(k, "first_ns"));
  }
  return rows;
}

json side_json(const Side& s) {
  json j = {{"ops", s.ops}, {"bytes", s.bytes}};
  if (s.doorbells || s.wqes) j["doorbells"] = s.doorbells, j["wqes"] = s.wqes;
  if (s.dur_ops > 0) {
    j["durations"] = s.dur_ops;
    j["mean_ns"] = s.mean_ns();
    j["stddev_ns"] = std::sqrt(s.variance());
    if (s.has_logs) j["geomean_ns"] = s.geomean_ns();
    j["sum_ns"] = s.dur_sum_ns;
  }
  if (s.p50_ns >= 0) j["p50_ns"] = s.p50_ns, j["p99_ns"] = s.p99_ns;
  if (s.active_ns > 0) {
    j["active_ns"] = s.active_ns;
    if (s.bytes > 0) j["gbytes_per_s"] = s.bytes / s.active_ns;
  }
  return j;
}

// The time a row's change explains: the change of its summed durations where both runs have
// them (the time spent, a stall of the machine in it too: additive, a connection's is its two
// QPs'), else the time its change in bytes takes at its own rate in the baseline.
double explained_ns(const Side& a, const Side& b) {
  if (a.dur_ops > 0 && b.dur_ops > 0) return b.dur_sum_ns - a.dur_sum_ns;
  if (a.bytes > 0 && a.active_ns > 0) return (b.bytes - a.bytes) * a.active_ns / a.bytes;
  return 0;
}

int group_order(const std::string& g) {
  for (int i = 0; i < static_cast<int>(std::size(kGroups)); ++i)
    if (g == kGroups[i]) return i;
  return static_cast<int>(std::size(kGroups));
}

std::string finite_or_null(double v, char* buf, size_t n, const char* fmt) {
  if (!std::isfinite(v)) return "new";
  std::snprintf(buf, n, fmt, v);
  return buf;
}

}  // namespace

json diff_experiments(const json& baseline, const json& experiment, const DiffOptions& o) {
  const Rows a = rows_of(baseline), b = rows_of(experiment);
  json changes = json::array(), only_a = json::array(), only_b = json::array();
  size_t compared = 0, unchanged = 0;
  struct Ranked {
    double explains, largest;
    int group;
    json row;
  };
  std::vector<Ranked> ranked;
  for (const auto& [key, sa] : a) {
    auto it = b.find(key);
    if (it == b.end()) {
      only_a.push_back({{"group", key.first}, {"key", key.second}, {"a", side_json(sa)}});
      continue;
    }
    const Side& sb = it->second;
    ++compared;
    json changed = json::array();
    double largest = 0;
    auto test = [&](const char* name, double x, double y) {
      const double rel = relative_change(x, y);
      if (rel * 100 <= o.count_threshold_percent) return;
      changed.push_back(name);
      largest = std::max(largest, rel);
    };
    test("ops", sa.ops, sb.ops);
    test("bytes", sa.bytes, sb.bytes);
    test("doorbells", sa.doorbells, sb.doorbells);
    test("wqes", sa.wqes, sb.wqes);
    if (sa.dur_ops > 1 && sb.dur_ops > 1) {
      const DurationChange d = duration_change(sa, sb, o.min_z);
      if (d.relative * 100 > o.threshold_percent) changed.push_back(d.field), largest = std::max(largest, d.relative);
    }
    if (changed.empty()) {
      ++unchanged;
      continue;
    }
    const double e = explained_ns(sa, sb);
    ranked.push_back({e, largest, group_order(key.first),
                      {{"group", key.first}, {"key", key.second}, {"changed", changed}, {"explains_ns", e},
                       {"change_percent", std::isfinite(largest) ? json(largest * 100) : json(nullptr)}, {"a", side_json(sa)}, {"b", side_json(sb)}}});
  }
  for (const auto& [key, sb] : b)
    if (!a.count(key)) only_b.push_back({{"group", key.first}, {"key", key.second}, {"b", side_json(sb)}});
  std::stable_sort(ranked.begin(), ranked.end(), [](const Ranked& x, const Ranked& y) {
    if (std::fabs(x.explains) != std::fabs(y.explains)) return std::fabs(x.explains) > std::fabs(y.explains);
    if (x.largest != y.largest) return x.largest > y.largest;
    return x.group < y.group;
  });
  for (Ranked& r : ranked) changes.push_back(std::move(r.row));
  return {{"format", "sigmatrace-diff"}, {"version", 1},
          {"baseline", baseline.value("experiment", "")}, {"experiment", experiment.value("experiment", "")},
          {"threshold_percent", o.threshold_percent}, {"min_z", o.min_z}, {"count_threshold_percent", o.count_threshold_percent},
          {"rows_compared", compared}, {"rows_unchanged", unchanged}, {"changes", changes},
          {"only_in_baseline", only_a}, {"only_in_experiment", only_b}};
}

std::string render_diff_text(const json& d, size_t top) {
  std::string out;
  char buf[512];
  const json& changes = d["changes"];
  std::snprintf(buf, sizeof buf,
                "sigmatrace diff: %s (baseline) -> %s\n%zu rows compared: %zu changed (counts and bytes by more than %g %%, durations' geometric "
                "means by more than %g %% and %g standard errors), %zu within that\n",
                d.value("baseline", "").c_str(), d.value("experiment", "").c_str(), d.value("rows_compared", size_t{0}), changes.size(),
                d.value("count_threshold_percent", 0.0), d.value("threshold_percent", 0.0), d.value("min_z", 0.0), d.value("rows_unchanged", size_t{0}));
  out += buf;
  if (!changes.empty()) {
    std::snprintf(buf, sizeof buf, "\n%-15s %-34s %-22s %14s %14s %9s %12s\n", "group", "row", "changed", "baseline", "experiment", "change", "explains ms");
    out += buf;
  }
  size_t shown = 0;
  for (const json& c : changes) {
    if (shown++ == top) break;
    std::string what;
    for (const json& m : c["changed"]) what += (what.empty() ? "" : ",") + m.get<std::string>();
    const std::string first = c["changed"][0].get<std::string>();
    const json& a = c["a"];
    const json& b = c["b"];
    char change[32], av[32], bv[32];
    const double x = a.value(first, 0.0), y = b.value(first, 0.0);
    std::snprintf(av, sizeof av, "%.0f", x);
    std::snprintf(bv, sizeof bv, "%.0f", y);
    const std::string pct = x != 0 ? finite_or_null((y - x) / x * 100, change, sizeof change, "%+.1f%%") : "new";
    std::snprintf(buf, sizeof buf, "%-15s %-34s %-22s %14s %14s %9s %12.3f\n", c.value("group", "").c_str(), c.value("key", "").c_str(), what.c_str(),
                  av, bv, pct.c_str(), c.value("explains_ns", 0.0) / 1e6);
    out += buf;
  }
  if (changes.size() > top) {
    std::snprintf(buf, sizeof buf, "(%zu more changes: --top N, or --json)\n", changes.size() - top);
    out += buf;
  }
  for (const auto& [which, key] : {std::pair{"baseline", "only_in_baseline"}, std::pair{"experiment", "only_in_experiment"}}) {
    const json& only = d[key];
    if (only.empty()) continue;
    std::snprintf(buf, sizeof buf, "only in the %s: %zu rows (", which, only.size());
    out += buf;
    for (size_t i = 0; i < only.size() && i < 5; ++i) out += (i ? "; " : "") + only[i].value("group", "") + " " + only[i].value("key", "");
    out += only.size() > 5 ? "; ...)\n" : ")\n";
  }
  return out;
}

}  // namespace sigmatrace::compare

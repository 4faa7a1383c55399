// See text_report.h.
#include "export/text_report.h"

#include "export/json_layers.h"

#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>

namespace sigmatrace::exporter {

using nlohmann::json;

namespace {

void add(std::string* out, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  *out += buf;
}

std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) b /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.1f %s" : "%.0f %s", b, units[u]);
  return buf;
}

uint64_t u(const json& j, const char* k) { return j.contains(k) && j[k].is_number() ? j[k].get<uint64_t>() : 0; }
double d(const json& j, const char* k) { return j.contains(k) && j[k].is_number() ? j[k].get<double>() : 0.0; }
std::string s(const json& j, const char* k) { return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : ""; }

}  // namespace

std::string render_text_report(const json& a, size_t top) {
  std::string out;
  const json& procs = a["processes"];
  uint64_t ops = 0, bytes = 0;
  for (const json& p : procs) ops += u(p, "ops"), bytes += u(p, "bytes_out") + u(p, "bytes_read");
  double span_s = static_cast<double>(a.value("end_ns", int64_t{0}) - a.value("start_ns", int64_t{0})) / 1e9;
  add(&out, "experiment %s: %zu processes on %zu hosts, %" PRIu64 " events, %" PRIu64 " operations, %s moved in %.3f s\n",
      s(a, "experiment").c_str(), procs.size(), a["hosts"].size(), u(a, "events"), ops, human_bytes(double(bytes)).c_str(), span_s);

  // Top connections and QPs by bytes.
  std::vector<json> conns(a["connections"].begin(), a["connections"].end());
  std::sort(conns.begin(), conns.end(), [](const json& x, const json& y) { return u(x, "bytes") > u(y, "bytes"); });
  add(&out, "\ntop connections by bytes:\n");
  if (conns.empty()) add(&out, "  (no connection with both ends in the trace)\n");
  for (size_t i = 0; i < std::min(top, conns.size()); ++i)
    add(&out, "  %-28s <-> %-28s %12s  (a->b %s, b->a %s)\n", s(conns[i], "a").c_str(), s(conns[i], "b").c_str(),
        human_bytes(double(u(conns[i], "bytes"))).c_str(), human_bytes(double(u(conns[i], "bytes_a_to_b"))).c_str(),
        human_bytes(double(u(conns[i], "bytes_b_to_a"))).c_str());
  std::vector<json> qps(a["qps"].begin(), a["qps"].end());
  auto qbytes = [](const json& q) { return u(q, "bytes_out") + u(q, "bytes_read"); };
  std::sort(qps.begin(), qps.end(), [&](const json& x, const json& y) { return qbytes(x) > qbytes(y); });
  add(&out, "\ntop QPs by bytes (out + read):\n");
  for (size_t i = 0; i < std::min(top, qps.size()); ++i) {
    const json& q = qps[i];
    std::string owner = procs[u(q, "process_id")].value("label", "");
    std::string peer = q["peer_process_id"].is_null() ? "?" : procs[u(q, "peer_process_id")].value("label", "");
    char rate[32] = "";  // over the QP's active span; aggregate mode has no timestamps
    if (q.contains("gbytes_per_s")) {
      const double g = d(q, "gbytes_per_s");  // bytes per ns = GB/s (10^9 bytes)
      if (g >= 1) std::snprintf(rate, sizeof rate, "%7.2f GB/s", g);
      else if (g >= 1e-3) std::snprintf(rate, sizeof rate, "%7.2f MB/s", g * 1e3);
      else std::snprintf(rate, sizeof rate, "%7.2f kB/s", g * 1e6);
    }
    add(&out, "  %-10s qp %-8" PRIu64 " %-3s %-10s -> %-10s %12s %10" PRIu64 " ops  %s\n", owner.c_str(), u(q, "qp_num"),
        s(q, "type").c_str(), s(q, "device").c_str(), peer.c_str(), human_bytes(double(qbytes(q))).c_str(), u(q, "ops"), rate);
  }

  // Host matrix. Its last row and column are the peers that were not traced ("unknown"): shown
  // only when some traffic went to or came from one.
  const json& hm = a["matrices"]["host"];
  size_t n = hm["labels"].size();
  bool unknown_used = false;
  for (size_t i = 0; i < n; ++i)
    unknown_used |= hm["bytes"][n - 1][i].get<uint64_t>() != 0 || hm["bytes"][i][n - 1].get<uint64_t>() != 0;
  if (n && !unknown_used) --n;
  add(&out, "\nhost matrix (bytes, row: source, column: destination):\n  %-16s", "");
  for (size_t c = 0; c < n; ++c) add(&out, " %12.12s", hm["labels"][c].get<std::string>().c_str());
  add(&out, "\n");
  for (size_t r = 0; r < n; ++r) {
    add(&out, "  %-16.16s", hm["labels"][r].get<std::string>().c_str());
    for (size_t c = 0; c < n; ++c) add(&out, " %12s", human_bytes(double(hm["bytes"][r][c].get<uint64_t>())).c_str());
    add(&out, "\n");
  }

  const json& im = a["imbalance"];
  add(&out, "\nimbalance:\n");
  add(&out, "  egress per host: max/mean %.2f (max %s: %s, mean %s)\n", d(im["host_egress"], "max_over_mean"),
      s(im["host_egress"], "max").c_str(), human_bytes(double(u(im["host_egress"], "max_bytes"))).c_str(),
      human_bytes(d(im["host_egress"], "mean_bytes")).c_str());
  add(&out, "  egress per rank: max/mean %.2f (max %s: %s, mean %s)\n", d(im["rank_egress"], "max_over_mean"),
      s(im["rank_egress"], "max").c_str(), human_bytes(double(u(im["rank_egress"], "max_bytes"))).c_str(),
      human_bytes(d(im["rank_egress"], "mean_bytes")).c_str());
  add(&out, "  heaviest pair %s: %s, %.2f x the mean pair (%s)\n", s(im, "heaviest_pair").c_str(),
      human_bytes(double(u(im, "heaviest_pair_bytes"))).c_str(), d(im, "heaviest_over_mean_pair"),
      human_bytes(d(im, "mean_pair_bytes")).c_str());

  // GPU-initiated RDMA: doorbells per GPU, and what the hijack cost.
  if (a.contains("gpus") && !a["gpus"].empty()) {
    add(&out, "\nGPU-initiated (doorbells the GPUs rang, seen by the profiler's pollers):\n");
    for (const json& g : a["gpus"]) {
      add(&out, "  %-10s %-6s %3" PRIu64 " QPs %10" PRIu64 " doorbells %10" PRIu64 " WQEBBs  %s\n", s(g, "label").c_str(),
          g["gpu"].is_null() ? "host-q" : ("GPU " + std::to_string(u(g, "gpu"))).c_str(), u(g, "qps"), u(g, "doorbells"),
          u(g, "wqebbs"), g.contains("doorbells_per_s") ? (std::to_string(uint64_t(d(g, "doorbells_per_s"))) + " doorbells/s").c_str() : "");
      if (g.contains("operations")) {  // SIGMATRACE_DOORBELLS=wqe: what the doorbells did
        const json& o = g["operations"];
        std::string by;
        for (const auto& [name, c] : o["by_opcode"].items())
          by += (by.empty() ? "" : ", ") + name + " " + std::to_string(u(c, "ops"));
        add(&out, "             operations %" PRIu64 " (%s): %s out, %s read", u(o, "ops"), by.c_str(),
            human_bytes(double(u(o, "bytes_out"))).c_str(), human_bytes(double(u(o, "bytes_read"))).c_str());
        if (o.contains("gbytes_per_s")) add(&out, ", %s/s", human_bytes(d(o, "gbytes_per_s") * 1e9).c_str());
        const json& w = g["wqe_recovery"];
        add(&out, "\n             WQEs recovered %" PRIu64 ", lost %" PRIu64 " WQEBBs (overwritten before read), damaged %" PRIu64
                  ", unread %" PRIu64 " WQEBBs; %" PRIu64 " data and %" PRIu64 " control doorbells",
            u(w, "wqes_recovered"), u(w, "lost_wqebbs"), u(w, "damaged_wqes"), u(w, "unread_wqebbs"), u(w, "data_doorbells"),
            u(w, "control_doorbells"));
        if (u(w, "doorbells_not_read")) add(&out, ", %" PRIu64 " whose WQEs were not read", u(w, "doorbells_not_read"));
        add(&out, "\n");
      }
    }
    if (a["matrices"].contains("gpu")) {  // GPU -> peer GPU traffic of the recovered operations
      const json& mx = a["matrices"]["gpu"];
      const auto& labels = mx["labels"];
      for (size_t i = 0; i < labels.size(); ++i)
        for (size_t k = 0; k < labels.size(); ++k)
          if (uint64_t b = mx["bytes"][i][k].get<uint64_t>())
            add(&out, "  %s -> %s: %s in %" PRIu64 " operations\n", labels[i].get<std::string>().c_str(),
                labels[k].get<std::string>().c_str(), human_bytes(double(b)).c_str(), mx["ops"][i][k].get<uint64_t>());
    }
  }
  for (const json& p : procs) {
    if (!p.contains("gpu_doorbells")) continue;
    const json& h = p["gpu_doorbells"];
    add(&out, "  %-10s doorbell pages hijacked %" PRIu64 ", not hijacked %" PRIu64 ", left alone (doorbells off) %" PRIu64
              "; %" PRIu64 " kernel launches",
        s(p, "label").c_str(), u(h, "pages_hijacked"), u(h, "pages_not_hijacked"), u(h, "pages_with_doorbells_off"), u(h, "kernel_launches"));
    if (u(h, "poller_wall_ns"))
      add(&out, "; pollers: %" PRIu64 ", CPU %.0f %% of their time", u(h, "pollers"),
          100.0 * double(u(h, "poller_cpu_ns")) / double(u(h, "poller_wall_ns")));
    if (u(h, "doorbells_on_unknown_qps")) add(&out, "; %" PRIu64 " doorbells on QPs not created in the trace", u(h, "doorbells_on_unknown_qps"));
    if (h.contains("kernel_end_markers")) {
      const json& k = h["kernel_end_markers"];
      add(&out, "; kernel ends seen %" PRIu64 " of %" PRIu64 " launches marked", u(k, "ends_reported"), u(k, "marked"));
      if (u(k, "dropped") || u(k, "unresolved"))
        add(&out, " (%" PRIu64 " lost, %" PRIu64 " still running at exit)", u(k, "dropped"), u(k, "unresolved"));
    }
    add(&out, "\n");
  }

  out += render_layer_report(a);
  // NVTX: the ranges that took the most time, and the work inside them (docs/nvtx.md).
  if (a.contains("nvtx_ranges") && !a["nvtx_ranges"].empty()) {
    add(&out, "\nNVTX ranges by total time (work counted in its innermost range):\n");
    const json& ranges = a["nvtx_ranges"];
    for (size_t i = 0; i < ranges.size() && i < top; ++i) {
      const json& r = ranges[i];
      const std::string name = s(r, "domain").empty() ? s(r, "name") : s(r, "domain") + " / " + s(r, "name");
      add(&out, "  %-36s %6" PRIu64 " x %12.6f s  %8" PRIu64 " ops %12s  %6" PRIu64 " launches\n", name.c_str(), u(r, "count"),
          static_cast<double>(u(r, "total_ns")) / 1e9, u(r, "ops"), human_bytes(double(u(r, "bytes"))).c_str(), u(r, "kernel_launches"));
    }
    for (const json& p : procs)
      if (p.contains("nvtx") && (u(p["nvtx"], "not_ended") || u(p["nvtx"], "unmatched_ends") || u(p["nvtx"], "undecoded_payloads")))
        add(&out, "  %-12s %" PRIu64 " not ended, %" PRIu64 " ends without a begin, %" PRIu64 " payloads not decoded\n", s(p, "label").c_str(),
            u(p["nvtx"], "not_ended"), u(p["nvtx"], "unmatched_ends"), u(p["nvtx"], "undecoded_payloads"));
  }
  // NCCL: each kind of call, its wire bytes against the algorithm's, its network time (docs/nccl.md).
  if (a.contains("nccl_calls")) {
    add(&out, "\nNCCL calls (per rank: network part from first post to last completion; wire/algorithm bytes):\n");
    for (const json& c : a["nccl_calls"]) {
      const double calls = std::max<double>(1, double(u(c, "calls")));
      const std::string what = s(c, "func") + " " + human_bytes(double(u(c, "bytes"))) +
                               (s(c, "algorithm").empty() ? "" : " " + s(c, "algorithm") + "/" + s(c, "protocol"));
      add(&out, "  %-36s %6" PRIu64 " calls  %8.1f WRs  wire %10s", what.c_str(), u(c, "calls"), double(u(c, "wrs")) / calls,
          human_bytes(double(u(c, "wire_bytes")) / calls).c_str());
      if (c.contains("wire_per_algorithm_byte")) add(&out, " (x%.3f)", c["wire_per_algorithm_byte"].get<double>());
      add(&out, "  network mean %10.1f us max %10.1f us\n", double(u(c, "network_mean_ns")) / 1e3, double(u(c, "network_max_ns")) / 1e3);
    }
    for (const json& p : procs)
      if (p.contains("nccl"))
        add(&out, "  %-12s %" PRIu64 " tasks; verbs operations tied to them: %" PRIu64 " by wr_id, %" PRIu64 " by QP, %" PRIu64 " not tied\n",
            s(p, "label").c_str(), u(p["nccl"], "tasks"), u(p["nccl"], "matched_by_wr_id"), u(p["nccl"], "matched_by_qp"),
            u(p["nccl"], "ops_unattributed"));
  }
  // Processes that ended before the others: which, when, and what their peers saw (json_process_ends.h).
  if (a.contains("ended_early") && !a["ended_early"].empty()) {
    add(&out, "\nprocesses that ended before the others:\n");
    for (const json& e : a["ended_early"]) {
      if (e["last_ns"].is_null()) add(&out, "  %-12s %s, with no timed event written", s(e, "label").c_str(), s(e, "how").c_str());
      else add(&out, "  %-12s %s at %.3f s", s(e, "label").c_str(), s(e, "how").c_str(), double(u(e, "last_ns")) / 1e9);
      if (u(e, "processes_that_went_on"))
        add(&out, "; %" PRIu64 " other processes went on (to %.3f s)", u(e, "processes_that_went_on"), double(u(e, "latest_ns")) / 1e9);
      add(&out, "\n");
      for (const json& q : e["peers_with_failed_completions"])
        add(&out, "    %-12s %" PRIu64 " failed completions on its QPs to %s\n", s(q, "label").c_str(), u(q, "failed_completions"),
            s(e, "label").c_str());
    }
  }
  add(&out, "\nerrors: %" PRIu64 "\n", u(a, "errors"));
  if (a.contains("error_kinds"))
    for (const auto& [kind, n] : a["error_kinds"].items()) add(&out, "  %-40s %" PRIu64 "\n", kind.c_str(), n.get<uint64_t>());
  for (const json& p : procs)
    if (u(p, "errors")) add(&out, "  %-12s %" PRIu64 " (failed completions %" PRIu64 ")\n", s(p, "label").c_str(), u(p, "errors"), u(p, "completion_errors"));
  add(&out, "dropped events: %" PRIu64 "\n", u(a, "events_dropped"));
  for (const json& p : procs)
    if (u(p, "events_dropped")) add(&out, "  %-12s %" PRIu64 "\n", s(p, "label").c_str(), u(p, "events_dropped"));
  if (a.contains("clock_sync") && a["hosts"].size() > 1) add(&out, "host clocks: %s\n", s(a["clock_sync"], "outcome").c_str());
  if (a.contains("hangs") && !a["hangs"]["dumps"].empty()) {
    const json& h = a["hangs"];
    add(&out, "\nhang dumps: %zu (sigmatrace profile --hang-dump); what waits:\n", h["dumps"].size());
    for (const json& w : h["waiting"]) {
      const json& op = w.contains("oldest_send") ? w["oldest_send"] : w["oldest_receive"];
      add(&out, "  %s qp %" PRIu64 " -> %s: %s of %" PRIu64 " B, waiting %.3f s at the dump: %s\n", s(w, "label").c_str(), u(w, "qp_num"),
          w.contains("peer_label") ? s(w, "peer_label").c_str() : "?", s(op, "opcode").c_str(), u(op, "bytes"),
          static_cast<double>(op["age_at_dump_ns"].get<int64_t>()) / 1e9, s(w, "waits_for").c_str());
    }
    if (h.contains("gpu_waiting"))
      for (const json& g : h["gpu_waiting"]) {
        add(&out, "  %s kernel %s, running %.3f s at the dump", s(g, "label").c_str(), s(g, "kernel").c_str(),
            static_cast<double>(g["running_at_dump_ns"].get<int64_t>()) / 1e9);
        if (g.contains("last_doorbell_age_at_dump_ns"))
          add(&out, ", its GPU's last doorbell %.3f s before", static_cast<double>(g["last_doorbell_age_at_dump_ns"].get<int64_t>()) / 1e9);
        add(&out, "%s\n", g["peers"].empty() ? ": no GPU peer in the trace" : ":");
        for (const json& pr : g["peers"]) add(&out, "    %s: %s\n", s(pr, "peer_label").c_str(), s(pr, "waits_for").c_str());
      }
    for (const json& q : h["hung_without_waiting_qps"])
      add(&out, "  %s: no work outstanding on any QP (stuck outside the traced communication, or waiting for a peer's one-sided write)\n",
          s(q, "label").c_str());
  }
  if (a.contains("timeline") && !a["timeline"].value("complete", true)) {
    // trace.pftrace is not the whole experiment: say what it leaves out (SQL and JSON are complete).
    const json& t = a["timeline"];
    add(&out, "timeline (trace.pftrace): %" PRIu64 " processes, %" PRIu64 " events left out by the selection", u(t, "processes"),
        u(t, "events_left_out"));
    if (t.contains("detail_end_ns"))
      add(&out, ", %" PRIu64 " after the budget's cut-off at +%.6f s only in its counters (budget %" PRIu64 " events)", u(t, "events_summarised"),
          static_cast<double>(t["detail_end_ns"].get<int64_t>() - a.value("start_ns", int64_t{0})) / 1e9, u(t, "budget_events"));
    add(&out, "\n");
  }
  uint64_t untimed = 0;
  for (const json& p : procs) untimed += u(p, "receives_untimed");
  if (untimed)
    add(&out, "receives matched to a send but not completed in the trace (no arrow in the timeline): %" PRIu64 "\n", untimed);
  if (!a["damage"].empty()) {
    add(&out, "damaged or incomplete files (intact parts analysed):\n");
    for (const json& dmg : a["damage"]) {
      add(&out, "  %s: %s, %" PRIu64 " damaged regions (%s skipped), %" PRIu64 " chunks missing, %" PRIu64 " undecodable\n",
          s(dmg, "file").c_str(), dmg.value("complete", false) ? "complete" : "no end record", u(dmg, "damaged_regions"),
          human_bytes(double(u(dmg, "bytes_skipped"))).c_str(), u(dmg, "chunks_missing"), u(dmg, "undecodable_chunks"));
      if (!s(dmg, "write_error").empty())
        add(&out, "    writes failed (%s): %" PRIu64 " events in %" PRIu64 " chunks lost (counted as dropped)\n",
            s(dmg, "write_error").c_str(), u(dmg, "events_lost_to_write_failure"), u(dmg, "chunks_lost_to_write_failure"));
      if (u(dmg, "events_missing_at_least"))
        add(&out, "    at least %" PRIu64 " events recorded before the last progress record are missing\n",
            u(dmg, "events_missing_at_least"));
    }
  }
  if (!a["skipped_files"].empty()) {
    add(&out, "skipped files (unusable):\n");
    for (const json& r : a["skipped_files"]) add(&out, "  %s\n", r.get<std::string>().c_str());
  }
  add(&out, "coverage (providers enabled / processes reporting):");
  if (a["coverage"].empty()) add(&out, " none reported");
  for (const auto& [name, c] : a["coverage"].items()) add(&out, " %s %" PRIu64 "/%" PRIu64, name.c_str(), u(c, "enabled_in"), u(c, "reported_by"));
  add(&out, "\n");
  return out;
}

}  // namespace sigmatrace::exporter

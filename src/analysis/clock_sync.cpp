// See clock_sync.h.
#include "analysis/clock_sync.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

#include "analysis/experiment_model.h"
#include "analysis/ibv_names.h"
#include "format/event_types.h"

namespace sigmatrace::analysis {

using format::EventType;

bool parse_clock_sync_mode(const std::string& text, ClockSyncMode* mode) {
  if (text == "auto") *mode = ClockSyncMode::automatic;
  else if (text == "on") *mode = ClockSyncMode::always;
  else if (text == "off") *mode = ClockSyncMode::off;
  else return false;
  return true;
}

const char* clock_sync_mode_name(ClockSyncMode mode) {
  switch (mode) {
    case ClockSyncMode::automatic: return "auto";
    case ClockSyncMode::always: return "on";
    case ClockSyncMode::off: return "off";
  }
  return "?";
}

bool MessageStampCollector::wants(uint16_t type) {
  switch (static_cast<EventType>(type)) {
    case EventType::ibv_qp_create: case EventType::ibv_send_wr: case EventType::ibv_completion: return true;
    default: return false;
  }
}

void MessageStampCollector::keep(uint32_t qpn, uint64_t seq, uint64_t tsc, bool receive) {
  constexpr uint64_t kAllOfTheFirst = 1024, kThenEvery = 16;
  if ((seq > kAllOfTheFirst && seq % kThenEvery) || stamps.size() >= kMaxStampsPerFile) {
    ++not_kept;
    return;
  }
  stamps.push_back({tsc, seq, qpn, receive});
}

void MessageStampCollector::on_event(const format::DecodedEvent& ev) {
  const uint64_t* v = ev.values;
  switch (static_cast<EventType>(ev.type)) {
    case EventType::ibv_qp_create:  // context pd handle qp_num ...: a new QP of that number counts afresh
      if (ev.field_count >= 4) by_qpn_.erase(static_cast<uint32_t>(v[3]));
      return;
    case EventType::ibv_send_wr:  // qp_num wr_id opcode ...
      if (ev.field_count >= 3 && op_consumes_receive(op_class_of_wr_opcode(v[2]))) {
        const auto qpn = static_cast<uint32_t>(v[0]);
        keep(qpn, ++by_qpn_[qpn].sends, ev.tsc, false);
      }
      return;
    case EventType::ibv_completion:  // cq qp_num wr_id status opcode ...: a successful receive
      if (ev.field_count >= 5 && v[3] == 0 && (v[4] & kWcRecv)) {
        const auto qpn = static_cast<uint32_t>(v[1]);
        keep(qpn, ++by_qpn_[qpn].receives, ev.tsc, true);
      }
      return;
    default: return;
  }
}

namespace {

struct Message {
  uint32_t from_host, to_host;
  int64_t sent_ns, received_ns;
};

// clock(t) - reference(t) = a + b (t - origin).
struct Line {
  double a = 0, b = 0;
};

// The difference clock_y - clock_x from the messages between x and y, as a line over x's clock:
// each message x -> y says theta(t) <= d, each one back theta(t) >= -d. Of the lines every
// message allows, the one in the middle of the widest band (the convex-hull method of clock
// synchronisation; NTP's estimate when there is no drift): the slope that makes the band widest,
// found on the smallest d of each direction per time window (only those bound the band), and
// zero drift when a line without drift satisfies every message; then the offset in the middle of
// the band all messages allow, and bound is half its width (negative when no line satisfies every
// message).
struct PairEstimate {
  bool ok = false;
  Line line;
  double bound_ns = 0;
  uint64_t messages = 0;
};

// A message's time on x's clock: when x sent it (x -> y) or received it (y -> x).
int64_t on_x(const Message* msg, bool from_x) { return from_x ? msg->sent_ns : msg->received_ns; }

struct Band {
  double upper = std::numeric_limits<double>::infinity(), lower = -std::numeric_limits<double>::infinity();
  double width() const { return upper - lower; }
};

// The band of offsets at the origin that the messages allow with drift b.
template <typename Points>
Band band(const Points& fwd, const Points& bwd, double b) {
  Band r;
  for (const auto& [t, d] : fwd) r.upper = std::min(r.upper, d - b * t);
  for (const auto& [t, d] : bwd) r.lower = std::max(r.lower, -d - b * t);
  return r;
}

PairEstimate estimate_pair(const std::vector<const Message*>& fwd, const std::vector<const Message*>& bwd, int64_t origin) {
  PairEstimate e;
  e.messages = fwd.size() + bwd.size();
  if (fwd.empty() || bwd.empty()) return e;
  // (time on x's clock - origin, d) of every message, and the smallest d per window.
  using Point = std::pair<double, double>;
  auto points = [&](const std::vector<const Message*>& v, bool from_x) {
    std::vector<Point> out;
    out.reserve(v.size());
    for (const Message* msg : v)
      out.emplace_back(static_cast<double>(on_x(msg, from_x) - origin), static_cast<double>(msg->received_ns - msg->sent_ns));
    return out;
  };
  const std::vector<Point> all_fwd = points(fwd, true), all_bwd = points(bwd, false);
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const auto* v : {&all_fwd, &all_bwd})
    for (const Point& p : *v) lo = std::min(lo, p.first), hi = std::max(hi, p.first);
  constexpr size_t kWindows = 64;
  const double width = (hi - lo) / kWindows + 1;
  auto envelope = [&](const std::vector<Point>& v) {
    std::vector<Point> best(kWindows, {0, std::numeric_limits<double>::infinity()});
    for (const Point& p : v) {
      Point& b = best[std::min(kWindows - 1, static_cast<size_t>((p.first - lo) / width))];
      if (p.second < b.second) b = p;
    }
    std::vector<Point> out;
    for (const Point& b : best)
      if (std::isfinite(b.second)) out.push_back(b);
    return out;
  };
  const std::vector<Point> env_fwd = envelope(all_fwd), env_bwd = envelope(all_bwd);
  // No drift unless the messages rule it out: a slope fitted to noise would move the offset at
  // the origin far from the messages. Otherwise the slope of the widest band: its width is
  // concave in the drift, a ternary search within +-1000 ppm finds it.
  double b = 0;
  if (band(all_fwd, all_bwd, 0).width() < 0) {
    double b_lo = -1e-3, b_hi = 1e-3;
    for (int i = 0; i < 200 && b_hi - b_lo > 1e-12; ++i) {
      const double m1 = b_lo + (b_hi - b_lo) / 3, m2 = b_hi - (b_hi - b_lo) / 3;
      if (band(env_fwd, env_bwd, m1).width() < band(env_fwd, env_bwd, m2).width()) b_lo = m1;
      else b_hi = m2;
    }
    b = (b_lo + b_hi) / 2;
  }
  const Band all = band(all_fwd, all_bwd, b);
  e.line = {(all.upper + all.lower) / 2, b};
  e.bound_ns = all.width() / 2;
  e.ok = true;
  return e;
}

// Maps a reading t of host h's clock to the reference's time r, where t = r + theta_h(r):
// r - origin = (t - origin - a) / (1 + b).
int64_t corrected(int64_t ns, const Line& l, int64_t origin) {
  return origin + static_cast<int64_t>(std::llround((static_cast<double>(ns - origin) - l.a) / (1 + l.b)));
}

void count_backward(const std::vector<Message>& msgs, const std::vector<Line>* lines, int64_t origin, uint64_t* backward, int64_t* min_latency) {
  *backward = 0;
  *min_latency = std::numeric_limits<int64_t>::max();
  for (const Message& msg : msgs) {
    int64_t s = msg.sent_ns, r = msg.received_ns;
    if (lines) s = corrected(s, (*lines)[msg.from_host], origin), r = corrected(r, (*lines)[msg.to_host], origin);
    *backward += r < s;
    *min_latency = std::min(*min_latency, r - s);
  }
  if (msgs.empty()) *min_latency = 0;
}

// Folds the correction into a process's clock: with base = anchor + rel, corrected(base) is
// anchor + (rel - a - b (anchor - origin)) / (1 + b).
void fold(ClockModel* c, const Line& l, int64_t origin) {
  c->intercept_ns = (c->intercept_ns - l.a - l.b * static_cast<double>(c->anchor_ns - origin)) / (1 + l.b);
  c->ns_per_tick /= 1 + l.b;
}

void retime_model(ExperimentModel* m, const std::vector<Line>& lines, int64_t origin) {
  auto fix = [&](int64_t* ns, uint32_t host) {
    if (*ns) *ns = corrected(*ns, lines[host], origin);
  };
  bool have_span = false;
  for (ProcessRow& p : m->processes) {
    fold(&p.clock, lines[p.host_id], origin);
    if (p.file && p.file->first_tsc) {
      p.first_ns = p.clock.to_ns(p.file->first_tsc);
      p.last_ns = p.clock.to_ns(p.file->last_tsc);
      if (!have_span || p.first_ns < m->start_ns) m->start_ns = p.first_ns;
      if (!have_span || p.last_ns > m->end_ns) m->end_ns = p.last_ns;
      have_span = true;
    }
    if (!p.ranges.rows().empty()) {
      std::vector<RangeRow> rows = p.ranges.rows();
      for (RangeRow& r : rows) r.start_ns = p.clock.to_ns(r.start_tsc), r.end_ns = p.clock.to_ns(r.end_tsc);
      const RangeCounters counters = p.ranges.counters;
      p.ranges.set(std::move(rows));
      p.ranges.counters = counters;
    }
  }
  for (DeviceRow& d : m->devices) fix(&d.open_ns, m->processes[d.process_id].host_id);
  for (QpRow& q : m->qps) {
    const uint32_t host = m->processes[q.process_id].host_id;
    fix(&q.create_ns, host);
    fix(&q.destroy_ns, host);
  }
  for (MrRow& r : m->mrs) {
    const uint32_t host = m->processes[r.process_id].host_id;
    fix(&r.reg_ns, host);
    fix(&r.dereg_ns, host);
  }
}

std::string format_ns(double ns) {
  char buf[64];
  if (std::fabs(ns) < 1e3) std::snprintf(buf, sizeof buf, "%.0f ns", ns);
  else if (std::fabs(ns) < 1e6) std::snprintf(buf, sizeof buf, "%.1f us", ns / 1e3);
  else std::snprintf(buf, sizeof buf, "%.2f ms", ns / 1e6);
  return buf;
}

}  // namespace

ClockSyncResult synchronize_host_clocks(ExperimentModel* m, const std::vector<std::vector<MessageStamp>>& stamps, ClockSyncMode mode) {
  ClockSyncResult r;
  r.mode = mode;
  r.origin_ns = m->start_ns;
  for (const std::string& h : m->hosts) r.hosts.push_back({h});
  if (mode == ClockSyncMode::off) {  // the first pass collected nothing for it
    r.outcome = "off (--clock-sync off): not estimated";
    return r;
  }
  const int64_t origin = r.origin_ns;
  // The sends by (QP, sequence number), then each receive with the send its peer QP made.
  std::unordered_map<uint64_t, int64_t> sent;
  auto key = [](int64_t qp, uint64_t seq) { return (static_cast<uint64_t>(qp) << 40) ^ seq; };
  for (size_t pid = 0; pid < stamps.size() && pid < m->processes.size(); ++pid)
    for (const MessageStamp& s : stamps[pid]) {
      if (s.receive) continue;
      const int64_t qp = m->qp_at(static_cast<uint32_t>(pid), s.qpn, s.tsc);
      if (qp != kNone) sent[key(qp, s.seq)] = m->processes[pid].clock.to_ns(s.tsc);
    }
  std::vector<Message> msgs;
  for (size_t pid = 0; pid < stamps.size() && pid < m->processes.size(); ++pid)
    for (const MessageStamp& s : stamps[pid]) {
      if (!s.receive) continue;
      const int64_t qp = m->qp_at(static_cast<uint32_t>(pid), s.qpn, s.tsc);
      if (qp == kNone) continue;
      const int64_t from_qp = m->qps[static_cast<size_t>(qp)].remote_qp_id;
      if (from_qp == kNone) continue;
      auto it = sent.find(key(from_qp, s.seq));
      if (it == sent.end()) continue;
      const uint32_t from_host = m->processes[m->qps[static_cast<size_t>(from_qp)].process_id].host_id;
      const uint32_t to_host = m->processes[pid].host_id;
      if (from_host != to_host) msgs.push_back({from_host, to_host, it->second, m->processes[pid].clock.to_ns(s.tsc)});
    }
  r.messages = msgs.size();
  count_backward(msgs, nullptr, origin, &r.backward_before, &r.min_latency_before_ns);
  r.backward_after = r.backward_before, r.min_latency_after_ns = r.min_latency_before_ns;
  if (m->hosts.empty()) return r;
  // The reference: the host of the first process (the lowest rank).
  const uint32_t ref = m->processes.empty() ? 0 : m->processes.front().host_id;
  r.hosts[ref].reference = r.hosts[ref].estimated = true;
  if (msgs.empty()) {
    r.outcome = m->hosts.size() < 2 ? "one host: nothing to correct"
                                     : "no messages between hosts to correct their clocks with (Full mode verbs sends paired with their receives)";
    return r;
  }

  // Estimates per pair of hosts that exchanged messages both ways, then each host tied to the
  // reference along the pairs (breadth first, the busiest pairs first).
  std::map<std::pair<uint32_t, uint32_t>, std::pair<std::vector<const Message*>, std::vector<const Message*>>> by_pair;
  for (const Message& msg : msgs) {
    const bool up = msg.from_host < msg.to_host;
    auto& both = by_pair[{std::min(msg.from_host, msg.to_host), std::max(msg.from_host, msg.to_host)}];
    (up ? both.first : both.second).push_back(&msg);
  }
  struct Edge {
    uint32_t x, y;
    PairEstimate e;  // clock_y - clock_x
  };
  std::vector<Edge> edges;
  for (const auto& [hosts, both] : by_pair) {
    PairEstimate e = estimate_pair(both.first, both.second, origin);
    r.hosts[hosts.first].messages += e.messages, r.hosts[hosts.second].messages += e.messages;
    if (e.ok) edges.push_back({hosts.first, hosts.second, e});
  }
  std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) { return a.e.messages > b.e.messages; });
  std::vector<Line> lines(m->hosts.size());
  std::vector<bool> tied(m->hosts.size(), false);
  tied[ref] = true;
  for (bool grew = true; grew;) {
    grew = false;
    for (const Edge& e : edges) {
      if (tied[e.x] == tied[e.y]) continue;
      const int sign = tied[e.x] ? 1 : -1;
      const uint32_t from = tied[e.x] ? e.x : e.y, to = tied[e.x] ? e.y : e.x;
      lines[to].a = lines[from].a + sign * e.e.line.a;
      lines[to].b = lines[from].b + sign * e.e.line.b;
      HostClockCorrection& h = r.hosts[to];
      h.estimated = true;
      h.bound_ns = r.hosts[from].bound_ns + e.e.bound_ns;
      tied[to] = grew = true;
    }
  }
  // Clocks that leave every message arriving after it was sent are consistent with no offset at
  // all (zero is within every bound): left alone unless asked. One message received before it
  // was sent proves them apart.
  const bool disagree = r.backward_before > 0;
  size_t estimated = 0;
  for (size_t h = 0; h < lines.size(); ++h) {
    if (!tied[h] || h == ref) continue;
    ++estimated;
    r.hosts[h].offset_ns = lines[h].a;
    r.hosts[h].drift_ppm = lines[h].b * 1e6;
  }
  if (!estimated) {
    r.outcome = "no pair of hosts exchanged messages both ways: their clocks cannot be compared";
    return r;
  }
  if (mode == ClockSyncMode::always || disagree) {
    retime_model(m, lines, origin);
    r.applied = true;
    count_backward(msgs, &lines, origin, &r.backward_after, &r.min_latency_after_ns);
  }
  std::string largest;
  double most = -1;
  for (const HostClockCorrection& h : r.hosts)
    if (h.estimated && !h.reference && std::fabs(h.offset_ns) > most) most = std::fabs(h.offset_ns), largest = h.host + " " + format_ns(h.offset_ns);
  r.outcome = std::string(r.applied ? "corrected" : "not needed") + ": " +
              std::to_string(estimated) + " of " + std::to_string(m->hosts.size() - 1) + " hosts tied to " + m->hosts[ref] + " by " +
              std::to_string(r.messages) + " messages; largest offset " + largest + "; " + std::to_string(r.backward_before) +
              " messages received before they were sent" + (r.applied ? ", " + std::to_string(r.backward_after) + " after" : "");
  return r;
}

}  // namespace sigmatrace::analysis

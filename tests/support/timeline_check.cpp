// See timeline_check.h. Field numbers: Perfetto's trace_packet.proto, track_descriptor.proto,
// process_descriptor.proto, thread_descriptor.proto, track_event.proto, clock_snapshot.proto.
#include "support/timeline_check.h"

#include "support/file_contents.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#ifdef SIGMATRACE_TIMELINE_CHECK_ZLIB
#include <zlib.h>
#endif

#ifdef SIGMATRACE_TIMELINE_CHECK_SQLITE
#include "export/sqlite_api.h"
#endif

namespace sigmatrace::test {
namespace {

// A cursor over one protobuf message: next() yields each field (number, wire type, value or bytes).
struct Wire {
  const uint8_t* p;
  const uint8_t* end;
  bool bad = false;
  uint32_t field = 0, type = 0;
  uint64_t value = 0;
  const uint8_t* data = nullptr;
  size_t size = 0;

  bool varint(uint64_t* v) {
    *v = 0;
    for (int shift = 0; shift < 64 && p < end; shift += 7) {
      uint8_t b = *p++;
      *v |= uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) return true;
    }
    return false;
  }
  bool next() {
    if (bad || p >= end) return false;
    uint64_t key;
    if (!varint(&key)) return bad = true, false;
    field = static_cast<uint32_t>(key >> 3), type = static_cast<uint32_t>(key & 7);
    switch (type) {
      case 0:
        if (!varint(&value)) return bad = true, false;
        return true;
      case 1:
        if (end - p < 8) return bad = true, false;
        value = 0;
        for (int i = 0; i < 8; ++i) value |= uint64_t{p[i]} << (8 * i);
        p += 8;
        return true;
      case 2: {
        uint64_t n;
        if (!varint(&n) || n > static_cast<uint64_t>(end - p)) return bad = true, false;
        data = p, size = static_cast<size_t>(n), p += n;
        return true;
      }
      case 5:
        if (end - p < 4) return bad = true, false;
        value = uint64_t{p[0]} | uint64_t{p[1]} << 8 | uint64_t{p[2]} << 16 | uint64_t{p[3]} << 24;
        p += 4;
        return true;
      default: return bad = true, false;
    }
  }
  Wire sub() const { return Wire{data, data + size}; }
  std::string text() const { return std::string(reinterpret_cast<const char*>(data), size); }
};

// False when the block does not inflate (or this checker was built without zlib).
bool inflate_block(const uint8_t* data, size_t size, std::string* out) {
#ifndef SIGMATRACE_TIMELINE_CHECK_ZLIB
  (void)data, (void)size, (void)out;
  return false;
#else
  z_stream z{};
  if (inflateInit(&z) != Z_OK) return false;
  z.next_in = const_cast<Bytef*>(data);
  z.avail_in = static_cast<uInt>(size);
  int rc = Z_OK;
  char buf[1 << 16];
  while (rc == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_NO_FLUSH);
    out->append(buf, sizeof buf - z.avail_out);
  }
  inflateEnd(&z);
  return rc == Z_STREAM_END;
#endif
}

struct TrackInfo {
  uint64_t parent = 0;
  std::string name;
  bool process = false, thread = false, counter = false;
  int64_t pid = 0, tid = 0;
};

struct Event {
  int64_t ts = 0;
  uint64_t track = 0;
  uint32_t type = 0, seq = 0;
  std::string category;
  std::vector<uint64_t> flows, terminating;
};

constexpr uint32_t kSliceBegin = 1, kSliceEnd = 2, kInstant = 3, kCounter = 4;
constexpr std::string_view kOpCategories[] = {"ibv.wr", "ibv.call", "ucx", "ofi"};

// Problems of one kind are reported once with a count and the first example.
class Problems {
 public:
  void add(const std::string& kind, const std::string& example) {
    auto [it, fresh] = counts_.try_emplace(kind, std::make_pair(uint64_t{0}, example));
    ++it->second.first;
  }
  std::vector<std::string> list() const {
    std::vector<std::string> out;
    for (const auto& [kind, c] : counts_) out.push_back(kind + " (" + std::to_string(c.first) + "x, e.g. " + c.second + ")");
    return out;
  }

 private:
  std::map<std::string, std::pair<uint64_t, std::string>> counts_;
};

void read_descriptor(Wire w, std::map<uint64_t, TrackInfo>* tracks, Problems* problems) {
  uint64_t uuid = 0;
  TrackInfo t;
  while (w.next()) {
    switch (w.field) {
      case 1: uuid = w.value; break;
      case 5: t.parent = w.value; break;
      case 2: t.name = w.text(); break;
      case 3: {
        t.process = true;
        for (Wire p = w.sub(); p.next();)
          if (p.field == 1) t.pid = static_cast<int32_t>(p.value);
        break;
      }
      case 4: {
        t.thread = true;
        for (Wire p = w.sub(); p.next();) {
          if (p.field == 1) t.pid = static_cast<int32_t>(p.value);
          if (p.field == 2) t.tid = static_cast<int64_t>(p.value);
        }
        break;
      }
      case 8: t.counter = true; break;
      default: break;
    }
  }
  if (uuid == 0) return;  // the trace-wide defaults (process ordering)
  if (tracks->count(uuid)) problems->add("track described twice", std::to_string(uuid));
  (*tracks)[uuid] = t;
}

// What the importer keeps per packet sequence: whether its state was started (a packet with
// SEQ_INCREMENTAL_STATE_CLEARED), its interned categories, and its own clock's origin on REALTIME.
struct SequenceState {
  bool cleared = false;
  std::map<uint64_t, std::string> categories;
  std::set<uint64_t> names;
  bool has_clock = false;
  int64_t origin = 0;
};

Event read_event(Wire w, const SequenceState& sq, Problems* problems) {
  Event e;
  while (w.next()) {
    switch (w.field) {
      case 9: e.type = static_cast<uint32_t>(w.value); break;
      case 11: e.track = w.value; break;
      case 22:
        if (e.category.empty()) e.category = w.text();
        break;
      case 3: {  // category_iids
        auto it = sq.categories.find(w.value);
        if (it == sq.categories.end()) problems->add("category iid used before it was interned", std::to_string(w.value));
        else if (e.category.empty()) e.category = it->second;
        break;
      }
      case 10:  // name_iid
        if (!sq.names.count(w.value)) problems->add("name iid used before it was interned", std::to_string(w.value));
        break;
      case 47: e.flows.push_back(w.value); break;
      case 48: e.terminating.push_back(w.value); break;
      default: break;
    }
  }
  return e;
}

#ifdef SIGMATRACE_TIMELINE_CHECK_SQLITE
// (ts, dur) of every operation with a duration, except GPU operations (instants by design).
std::multiset<std::pair<int64_t, int64_t>> op_durations(const std::string& path, std::string* error) {
  std::multiset<std::pair<int64_t, int64_t>> out;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    *error = "cannot open " + path;
    sqlite3_close(db);
    return out;
  }
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db, "SELECT ts_ns, dur_ns FROM op WHERE dur_ns > 0 AND layer != 'gpu'", -1, &st, nullptr) != SQLITE_OK) {
    *error = std::string("op query: ") + sqlite3_errmsg(db);
  } else {
    while (sqlite3_step(st) == SQLITE_ROW) out.insert({sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1)});
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  return out;
}
#endif

}  // namespace

std::string TimelineReport::summary() const {
  std::ostringstream o;
  o << packets << " packets, " << tracks << " tracks, " << processes << " processes, " << threads << " threads, " << slices
    << " slices (" << slices_with_duration << " with a duration), " << instants << " instants, " << counters << " counter values, "
    << flows << " flows (" << flow_starts_without_end << " started without an end), clock snapshot " << (clock_snapshot ? "yes" : "no");
  if (op_slices_checked) o << ", " << op_slices_checked << " operations matched to their slices";
  return o.str();
}

TimelineReport check_timeline(const std::string& pftrace_path, const std::string& sqlite_path) {
  TimelineReport r;
  Problems problems;
  std::ifstream in(pftrace_path, std::ios::binary);
  if (!in) {
    r.problems.push_back("cannot open " + pftrace_path);
    return r;
  }
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::map<uint64_t, TrackInfo> tracks;
  std::vector<Event> events;
  std::map<uint32_t, SequenceState> sequences;
  // The packets of a buffer (the file, or a compressed block unpacked), in file order.
  std::function<void(const uint8_t*, size_t, const std::string&)> read_packets = [&](const uint8_t* data, size_t size, const std::string& where) {
    Wire trace{data, data + size};
    while (trace.next()) {
      if (trace.field != 1 || trace.type != 2) continue;
      ++r.packets;
      int64_t ts = 0;
      uint32_t seq = 0, flags = 0;
      bool have_ts = false, own_clock = true;
      Wire event{nullptr, nullptr}, interned{nullptr, nullptr}, snapshot{nullptr, nullptr};
      bool defaults = false;
      for (Wire p = trace.sub(); p.next();) {
        if (p.field == 8) ts = static_cast<int64_t>(p.value), have_ts = true;
        else if (p.field == 10) seq = static_cast<uint32_t>(p.value);
        else if (p.field == 13) flags = static_cast<uint32_t>(p.value);
        else if (p.field == 58) own_clock = false;  // an explicit clock: REALTIME
        else if (p.field == 59) defaults = true;
        else if (p.field == 12) interned = p.sub();
        else if (p.field == 60) read_descriptor(p.sub(), &tracks, &problems);
        else if (p.field == 11) event = p.sub();
        else if (p.field == 6) snapshot = p.sub();
        else if (p.field == 50) {
          // compressed_packets: a zlib stream of more packets.
          --r.packets;  // counted are the packets it holds
          std::string out;
          const bool ok = inflate_block(p.data, p.size, &out);
          if (!ok) problems.add("compressed packets that do not inflate", where);
          else read_packets(reinterpret_cast<const uint8_t*>(out.data()), out.size(), where + " (compressed block)");
        }
      }
      SequenceState& sq = sequences[seq];
      if (flags & 1) sq = SequenceState{}, sq.cleared = true;
      if ((flags & 2) && !sq.cleared) problems.add("packet that needs incremental state before its sequence was started (Perfetto skips it)", where);
      if (interned.p)
        for (Wire t = interned; t.next();) {
          uint64_t iid = 0;
          std::string text;
          for (Wire x = t.sub(); x.next();) {
            if (x.field == 1) iid = x.value;
            if (x.field == 2) text = x.text();
          }
          if (t.field == 1) sq.categories[iid] = text;
          if (t.field == 2) sq.names.insert(iid);
        }
      if (snapshot.p) {
        int64_t own = -1, realtime = 0;
        for (Wire c = snapshot; c.next();) {
          if (c.field == 2) r.clock_snapshot = true;  // primary_trace_clock
          if (c.field != 1) continue;
          uint64_t id = 0, value = 0;
          for (Wire x = c.sub(); x.next();) {
            if (x.field == 1) id = x.value;
            if (x.field == 2) value = x.value;
          }
          if (id == 64) own = static_cast<int64_t>(value);
          if (id == 1) realtime = static_cast<int64_t>(value);
        }
        if (own >= 0) sq.has_clock = true, sq.origin = realtime - own;
      }
      if (defaults && !sq.has_clock) problems.add("sequence defaults without its clock declared", where);
      if (!event.p) continue;
      Event e = read_event(event, sq, &problems);
      e.ts = sq.has_clock && own_clock ? sq.origin + ts : ts, e.seq = seq;
      if (!have_ts) problems.add("track event without a timestamp", "packet " + std::to_string(r.packets));
      if (!seq) problems.add("track event without a sequence id (dropped by Perfetto)", "packet " + std::to_string(r.packets));
      events.push_back(std::move(e));
    }
    if (trace.bad) problems.add("trace.pftrace does not decode", where + " at byte " + std::to_string(trace.p - data));
  };
  read_packets(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), pftrace_path);
  if (!r.clock_snapshot) problems.add("no clock snapshot declaring the trace clock", pftrace_path);

  // Processes and threads, and which process (pid) each track belongs to.
  r.tracks = tracks.size();
  std::set<int64_t> pids;
  for (const auto& [uuid, t] : tracks) {
    if (t.process) {
      ++r.processes;
      if (t.pid <= 0) problems.add("process descriptor without a pid", t.name);
      if (!pids.insert(t.pid).second) problems.add("two process tracks with one pid (Perfetto merges them)", std::to_string(t.pid));
    }
  }
  std::set<std::pair<int64_t, int64_t>> tids;
  for (const auto& [uuid, t] : tracks) {
    if (!t.thread) continue;
    ++r.threads;
    if (t.pid <= 0 || t.tid <= 0) problems.add("thread descriptor without pid and tid", std::to_string(uuid));
    if (!pids.count(t.pid)) problems.add("thread of a pid without a process descriptor", std::to_string(t.pid));
    if (!tids.insert({t.pid, t.tid}).second) problems.add("two thread tracks with one tid", std::to_string(t.tid));
  }
  std::unordered_map<uint64_t, int64_t> pid_of;  // 0: a global track
  for (const auto& [uuid, t] : tracks) {
    const TrackInfo* x = &t;
    std::set<uint64_t> seen;
    uint64_t at = uuid;
    while (!x->process && !x->thread && x->parent && seen.insert(at).second) {
      auto it = tracks.find(x->parent);
      if (it == tracks.end()) {
        problems.add("track whose parent is not described", t.name);
        break;
      }
      at = x->parent, x = &it->second;
    }
    pid_of[uuid] = x->process || x->thread ? x->pid : 0;
  }

  // Events in the importer's order: by timestamp, file order among equal ones.
  std::vector<size_t> order(events.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return events[a].ts < events[b].ts; });
  std::unordered_map<uint32_t, int64_t> pid_of_seq;
  std::unordered_map<uint64_t, std::vector<std::pair<size_t, uint64_t>>> open;  // track -> (begin event, slice id)
  std::unordered_map<uint64_t, uint64_t> active_flow;                           // flow id -> slice id it is at
  std::multiset<std::pair<int64_t, int64_t>> op_slices;
  uint64_t next_slice = 0;
  bool any_event = false;
  for (size_t idx : order) {
    const Event& e = events[idx];
    auto t = tracks.find(e.track);
    if (t == tracks.end()) {
      problems.add("event on a track that is not described", std::to_string(e.track));
      continue;
    }
    if (e.type == kCounter) {
      ++r.counters;
      if (!t->second.counter) problems.add("counter value on a track that is not a counter", t->second.name);
      continue;
    }
    if (t->second.counter) problems.add("slice or instant on a counter track", t->second.name);
    if (!any_event) r.first_ts = e.ts, any_event = true;
    r.last_ts = e.ts;  // in timestamp order
    const int64_t pid = pid_of[e.track];
    if (!pid) problems.add("slice or instant on a track of no process or thread", t->second.name);
    else if (auto [it, fresh] = pid_of_seq.try_emplace(e.seq, pid); !fresh && it->second != pid)
      problems.add("one file's events on tracks of two processes", t->second.name);
    uint64_t slice = 0;
    if (e.type == kSliceBegin) {
      slice = ++next_slice;
      open[e.track].push_back({idx, slice});
    } else if (e.type == kSliceEnd) {
      auto& stack = open[e.track];
      if (stack.empty()) {
        problems.add("slice end without a begin", t->second.name);
        continue;
      }
      const Event& b = events[stack.back().first];
      slice = stack.back().second;
      stack.pop_back();
      ++r.slices;
      const int64_t dur = e.ts - b.ts;
      if (dur > 0) ++r.slices_with_duration;
      if (std::find(std::begin(kOpCategories), std::end(kOpCategories), b.category) != std::end(kOpCategories) && dur > 0)
        op_slices.insert({b.ts, dur});
    } else if (e.type == kInstant) {
      slice = ++next_slice;
      ++r.slices, ++r.instants;
    } else {
      problems.add("track event of unknown type", std::to_string(e.type));
      continue;
    }
    for (uint64_t id : e.flows) {
      auto [it, fresh] = active_flow.try_emplace(id, slice);
      if (!fresh) {
        if (it->second != slice) ++r.flows;
        it->second = slice;
      }
    }
    for (uint64_t id : e.terminating) {
      auto it = active_flow.find(id);
      if (it == active_flow.end()) {
        problems.add("flow that ends before it starts (or never starts): Perfetto drops it", t->second.name + " at " + std::to_string(e.ts));
        continue;
      }
      if (it->second != slice) ++r.flows;
      active_flow.erase(it);
    }
  }
  for (const auto& [track, stack] : open)
    if (!stack.empty()) problems.add("slice that never ends (no duration)", tracks[track].name);
  r.flow_starts_without_end = active_flow.size();

#ifdef SIGMATRACE_TIMELINE_CHECK_SQLITE
  if (!sqlite_path.empty()) {
    std::string error;
    const auto ops = op_durations(sqlite_path, &error);
    if (!error.empty()) {
      problems.add("trace.sqlite unreadable", error);
    } else {
      for (const auto& d : ops) {
        auto it = op_slices.find(d);
        if (it == op_slices.end()) {
          problems.add("operation with a duration in trace.sqlite that is no slice of that duration",
                       "ts " + std::to_string(d.first) + " dur " + std::to_string(d.second));
          continue;
        }
        op_slices.erase(it);
        ++r.op_slices_checked;
      }
      for (const auto& d : op_slices)
        problems.add("operation slice that trace.sqlite does not have", "ts " + std::to_string(d.first) + " dur " + std::to_string(d.second));
    }
  }
#else
  (void)sqlite_path;
#endif
  r.problems = problems.list();
  return r;
}

std::string uncompressed_pftrace(const std::string& path) {
  const std::string bytes = read_file(path);
  std::string out;
  Wire trace{reinterpret_cast<const uint8_t*>(bytes.data()), reinterpret_cast<const uint8_t*>(bytes.data()) + bytes.size()};
  const uint8_t* start = trace.p;
  while (trace.next()) {
    bool compressed = false;
    for (Wire p = trace.sub(); p.next();)
      if (p.field == 50) compressed = inflate_block(p.data, p.size, &out);
    if (!compressed) out.append(reinterpret_cast<const char*>(start), static_cast<size_t>(trace.p - start));
    start = trace.p;
  }
  return out;
}

void expect_valid_timeline(const std::string& dir) {
  const std::string sqlite = dir + "/trace.sqlite";
  const bool have_sqlite = std::ifstream(sqlite).good();
  TimelineReport r = check_timeline(dir + "/trace.pftrace", have_sqlite ? sqlite : "");
  for (const std::string& p : r.problems) ADD_FAILURE() << dir << "/trace.pftrace: " << p << "\n  " << r.summary();
}

}  // namespace sigmatrace::test

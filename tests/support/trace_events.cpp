// See trace_events.h.
#include "support/trace_events.h"

#include "format/experiment_layout.h"
#include "format/trace_reader.h"

namespace sigmatrace::test {

std::vector<const TraceEvent*> ProcessEvents::of(format::EventType t) const {
  std::vector<const TraceEvent*> r;
  for (const TraceEvent& e : events)
    if (e.type == static_cast<uint16_t>(t)) r.push_back(&e);
  return r;
}

bool for_each_trace_event(const std::string& path, const std::function<void(uint32_t tid, const format::DecodedEvent&)>& fn,
                          std::string* error, bool intact) {
  format::TraceFileReader r;
  if (!r.open(path, error)) return false;
  format::Chunk c;
  format::DecodedEvent ev;
  while (r.next_chunk(&c)) {
    format::ChunkEventDecoder d(c.header, c.payload.data(), c.payload.size(), &r.schema());
    while (d.next(&ev)) fn(c.header.tid, ev);
    if (intact && d.failed()) {
      *error = path + ": a malformed chunk";
      return false;
    }
  }
  if (intact && !r.losses().empty()) {
    *error = path + ": damaged (" + r.losses().front().reason + ")";
    return false;
  }
  if (intact && r.chunks_missing()) {
    *error = path + ": " + std::to_string(r.chunks_missing()) + " chunks missing";
    return false;
  }
  return true;
}

bool read_experiment(const std::string& dir, std::vector<ProcessEvents>* out, std::string* error) {
  for (const std::string& path : format::list_trace_files(dir)) {
    ProcessEvents p;
    p.path = path;
    {
      format::TraceFileReader r;
      if (!r.open(path, error)) return false;
      if (const std::string* exe = format::find_meta(r.metadata(), "executable")) p.executable = *exe;
    }
    bool ok = for_each_trace_event(
        path,
        [&](uint32_t tid, const format::DecodedEvent& ev) {
          TraceEvent e;
          e.type = ev.type;
          e.tid = tid;
          e.tsc = ev.tsc;
          e.v.assign(ev.values, ev.values + ev.field_count);
          for (int i = 0; i < ev.field_count; ++i)
            if (!ev.bytes[i].empty()) {
              e.bytes = std::string(ev.bytes[i]);
              break;
            }
          p.events.push_back(std::move(e));
        },
        error);
    if (!ok) return false;
    out->push_back(std::move(p));
  }
  return true;
}

std::vector<const ProcessEvents*> processes_named(const std::vector<ProcessEvents>& all, const std::string& name) {
  std::vector<const ProcessEvents*> r;
  for (const ProcessEvents& p : all)
    if (p.executable.size() >= name.size() && p.executable.compare(p.executable.size() - name.size(), name.size(), name) == 0 &&
        (p.executable.size() == name.size() || p.executable[p.executable.size() - name.size() - 1] == '/'))
      r.push_back(&p);
  return r;
}

}  // namespace sigmatrace::test

// Reading back what a traced program recorded: every event of every process of an experiment, each
// with its fields in schema order (the tests of every provider assert on them), or one file's
// events as they are decoded (the runtime's tests, on files of millions of marks).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "format/chunk_codec.h"
#include "format/event_types.h"

namespace sigmatrace::test {

struct TraceEvent {
  uint16_t type = 0;
  uint32_t tid = 0;  // the recording thread's (0: the process stream)
  uint64_t tsc = 0;
  std::vector<uint64_t> v;  // field values in schema order (bytes fields: 0)
  std::string bytes;        // the first bytes field, if any
  uint64_t operator[](size_t i) const { return i < v.size() ? v[i] : 0; }
};

struct ProcessEvents {
  std::string path;
  std::string executable;
  std::vector<TraceEvent> events;
  std::vector<const TraceEvent*> of(format::EventType t) const;
  size_t count(format::EventType t) const { return of(t).size(); }
};

// The one reader of trace files in the tests: each event of the file in order, with the thread
// that recorded it. intact: a malformed chunk, a damaged range or a missing chunk is an error
// (false, with *error); otherwise what can be read is, as a salvaging reader would.
bool for_each_trace_event(const std::string& path, const std::function<void(uint32_t tid, const format::DecodedEvent&)>& fn,
                          std::string* error, bool intact = true);

// One entry per trace file; false (with *error) when a file cannot be read intact.
bool read_experiment(const std::string& dir, std::vector<ProcessEvents>* out, std::string* error);

// Processes whose executable path ends with name (e.g. "ib_write_bw").
std::vector<const ProcessEvents*> processes_named(const std::vector<ProcessEvents>& all, const std::string& name);

}  // namespace sigmatrace::test

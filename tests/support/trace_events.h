// Reading back what a traced program recorded: every event of every process of an experiment, each
// with its fields in schema order (the tests of every provider assert on them).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "format/event_types.h"

namespace sigmatrace::test {

struct TraceEvent {
  uint16_t type = 0;
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

// One entry per trace file; false (with *error) when a file cannot be read intact.
bool read_experiment(const std::string& dir, std::vector<ProcessEvents>* out, std::string* error);

// Processes whose executable path ends with name (e.g. "ib_write_bw").
std::vector<const ProcessEvents*> processes_named(const std::vector<ProcessEvents>& all, const std::string& name);

}  // namespace sigmatrace::test

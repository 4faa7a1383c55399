// The invariants of trace.pftrace as Perfetto's importer reads it, checked on every experiment the
// integration tests analyse (and by `pftrace_check TRACE [SQLITE]`):
// - every packet has a sequence; every track event is on a described track; every slice or instant
//   is on a track of a process or thread (process/thread descriptors with pid and tid), and all
//   of one sequence's (one file's) events belong to one process;
// - slices nest on each track (no end without a begin, none left open) and, where trace.sqlite is
//   given, exactly the operations with a duration there are slices with that start and duration;
// - flows go forward in time: events are taken in timestamp order as the importer does, and a
//   terminating id that no earlier event started (an arrow that would run backwards, which the
//   importer drops silently) is a problem; ids started but never continued are counted;
// - a clock snapshot declares the trace clock.
// Decodes the protobuf wire format itself (only the fields the checks need).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace sigmatrace::test {

struct TimelineReport {
  uint64_t packets = 0, tracks = 0, processes = 0, threads = 0;
  uint64_t slices = 0, slices_with_duration = 0, instants = 0, counters = 0;
  uint64_t flows = 0, flow_starts_without_end = 0;
  uint64_t op_slices_checked = 0;  // operations of trace.sqlite found as slices
  int64_t first_ts = 0, last_ts = 0;  // of the slices and instants (not counters)
  bool clock_snapshot = false;
  std::vector<std::string> problems;  // empty: every invariant holds
  std::string summary() const;
};

// sqlite_path may be empty (no cross-check), or name a trace.sqlite of the same analysis.
TimelineReport check_timeline(const std::string& pftrace_path, const std::string& sqlite_path);

// The file's packets with every compressed block unpacked in place (for tests that look for texts).
std::string uncompressed_pftrace(const std::string& path);

// GoogleTest helper: checks DIR/trace.pftrace (with DIR/trace.sqlite when it exists) and adds a
// failure per problem.

void expect_valid_timeline(const std::string& experiment_dir);

}  // namespace sigmatrace::test

// Reading back what a test program recorded: user marks per thread, process summaries.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "analysis/experiment_scan.h"
#include "support/process_runner.h"

namespace sigmatrace::test {

struct MarkTrace {
  std::map<uint32_t, std::vector<std::pair<uint64_t, uint64_t>>> marks_by_tid;  // (id, value) in order
  std::map<uint64_t, uint64_t> count_by_id;
  analysis::FileSummary summary;
};

// intact: the file must have no damage (a test failure otherwise); false for salvaged files.
MarkTrace read_marks(const std::string& trace_file, bool intact = true);
std::vector<std::string> trace_files(const std::string& dir);

// An offset inside the compressed payload of the trace's middle chunk (never in the file header or a
// chunk header), for tests that cut or damage a file where its events are. The file's size alone
// does not say where that is: its header is a third of a small, well compressed trace.
uint64_t middle_chunk_payload_offset(const std::string& trace_bytes);

// Options that run a program with libsigmatrace.so preloaded, writing into the experiment dir.
ProcessOptions traced(const std::string& dir, std::map<std::string, std::string> env = {});
// argv of tests/bin/mark_workload with args.
std::vector<std::string> workload(std::vector<std::string> args);

// Aggregate-mode entries of the user-mark kind: id -> (count, sum of values).
std::map<uint64_t, std::pair<uint64_t, uint64_t>> read_mark_aggregates(const std::string& trace_file);

}  // namespace sigmatrace::test

// See trace_inspection.h.
#include "support/trace_inspection.h"

#include <gtest/gtest.h>

#include <cstring>

#include "format/experiment_layout.h"
#include "format/file_layout.h"
#include "support/trace_events.h"

namespace sigmatrace::test {

namespace {
template <typename Fn>
void for_each_event(const std::string& path, Fn fn, bool intact = true) {
  std::string err;
  EXPECT_TRUE(for_each_trace_event(path, fn, &err, intact)) << err;
}
}  // namespace

uint64_t middle_chunk_payload_offset(const std::string& trace_bytes) {
  format::FileHeader fh{};
  if (trace_bytes.size() < sizeof fh) {
    ADD_FAILURE() << "not a trace: " << trace_bytes.size() << " bytes";
    return 0;
  }
  memcpy(&fh, trace_bytes.data(), sizeof fh);
  std::vector<std::pair<uint64_t, uint64_t>> payloads;  // (offset, stored bytes) of each chunk
  uint64_t off = sizeof fh + fh.body_bytes;
  format::ChunkHeader ch{};
  while (off + sizeof ch <= trace_bytes.size()) {
    memcpy(&ch, trace_bytes.data() + off, sizeof ch);
    payloads.push_back({off + sizeof ch, ch.stored_bytes});
    off += sizeof ch + ch.stored_bytes;
  }
  if (payloads.empty()) {
    ADD_FAILURE() << "the trace holds no chunk";
    return 0;
  }
  const auto [at, bytes] = payloads[payloads.size() / 2];
  return at + bytes / 2;
}

MarkTrace read_marks(const std::string& trace_file, bool intact) {
  MarkTrace t;
  for_each_event(
      trace_file,
      [&](uint32_t tid, const format::DecodedEvent& ev) {
        if (ev.type != static_cast<uint16_t>(format::EventType::user_mark)) return;
        t.marks_by_tid[tid].push_back({ev.values[0], ev.values[1]});
        t.count_by_id[ev.values[0]]++;
      },
      intact);
  t.summary = analysis::scan_trace_file(trace_file);
  return t;
}

std::map<uint64_t, std::pair<uint64_t, uint64_t>> read_mark_aggregates(const std::string& trace_file) {
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> out;
  for_each_event(trace_file, [&](uint32_t, const format::DecodedEvent& ev) {
    if (ev.type != static_cast<uint16_t>(format::EventType::aggregate_entry)) return;
    if (ev.values[1] != static_cast<uint64_t>(format::AggregateKey::user_mark)) return;
    auto& [count, sum] = out[ev.values[2]];
    count += ev.values[4];
    sum += ev.values[5];
  });
  return out;
}

std::vector<std::string> trace_files(const std::string& dir) { return format::list_trace_files(dir); }

ProcessOptions traced(const std::string& dir, std::map<std::string, std::string> env) {
  ProcessOptions o;
  o.set_env = std::move(env);
  o.set_env["LD_PRELOAD"] = build_path("lib/libsigmatrace.so");
  o.set_env["SIGMATRACE_OUTPUT"] = dir;
  return o;
}

std::vector<std::string> workload(std::vector<std::string> args) {
  args.insert(args.begin(), build_path("tests/bin/mark_workload"));
  return args;
}

}  // namespace sigmatrace::test

// NVTX ranges of one process, rebuilt in the first pass from what the nvtx provider recorded:
// push/pop ranges matched per thread and domain, start/end ranges by id (ended on any thread),
// marks as ranges of no length; their domain, message (registered strings resolved), category
// and decoded payload ("count=1048576 datatype=ncclFloat32 ..."). The second pass asks which
// range an operation lies in: the innermost range open on its thread at its time.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "format/chunk_codec.h"

namespace sigmatrace::analysis {

struct RangeRow {
  uint64_t range_id = 0;       // process_id << 40 | n, in order of begin
  uint32_t process_id = 0;
  uint32_t tid = 0;            // the thread that began it
  int64_t thread_id = -1;
  uint64_t kind = 0;           // format::NvtxKind
  uint64_t start_tsc = 0, end_tsc = 0;
  bool ended = false;          // false: still open when the trace ended (end_tsc is the file's last time)
  int64_t start_ns = 0, end_ns = 0;
  int64_t parent = -1;         // index (in the process's ranges) of the range it lies in on its thread
  uint32_t depth = 0;
  uint64_t category = 0, color = 0;
  std::string domain, name, category_name, payload;
  std::string path;            // "domain / outer / inner" (domain omitted for NVTX's default one)
};

// Loss and oddities, said in the outputs.
struct RangeCounters {
  uint64_t ranges = 0, marks = 0, unended = 0, unmatched_ends = 0, undecoded_payloads = 0;
};

// Fed one file's NVTX events in file order (each thread's in its own order), then finished.
class NvtxCollector {
 public:
  void on_event(uint32_t tid, const format::DecodedEvent& ev);
  bool empty() const { return ranges_.empty(); }
  // Names resolved, payloads decoded, open ranges closed at last_tsc; ids and times not yet set.
  std::vector<RangeRow> finish(uint64_t last_tsc, RangeCounters* counters);

 private:
  struct Schema {
    uint64_t kind = 0, size = 0;
    std::string name;
    std::vector<std::vector<std::string>> lines;  // tab-separated fields of each entry
  };
  struct Pending {
    uint64_t domain = 0, message_handle = 0, schema = 0;
    std::string payload_bytes;
    bool has_payload = false;
  };
  std::string decode(const Pending& p, RangeCounters* counters) const;
  std::vector<RangeRow> ranges_;
  std::vector<Pending> pending_;                                          // per range
  std::map<std::pair<uint32_t, uint64_t>, std::vector<uint32_t>> open_;    // (tid, domain) -> pushed ranges
  std::unordered_map<uint64_t, uint32_t> started_;                         // start/end range id -> range
  std::unordered_map<uint32_t, uint32_t> last_begun_;                      // tid -> its latest range (payloads follow it)
  std::unordered_map<uint32_t, std::vector<uint32_t>> innermost_;          // tid -> ranges open on it, by begin
  std::unordered_map<uint64_t, std::string> domains_, strings_;
  std::map<std::pair<uint64_t, uint64_t>, std::string> categories_;
  std::unordered_map<uint64_t, Schema> schemas_;
  uint64_t unmatched_ends_ = 0;
};

// The ranges of one process, and the lookup of the range an operation lies in.
class ProcessRanges {
 public:
  void set(std::vector<RangeRow> rows);
  const std::vector<RangeRow>& rows() const { return rows_; }
  // The innermost range (not a mark) open on thread_id at ts_ns: its index in rows(), -1 if none.
  // A thread with none open borrows the innermost range of the one other thread that has one open
  // then (a worker thread doing the waiting thread's work), if exactly one has.
  int64_t at(int64_t thread_id, int64_t ts_ns) const;
  // A range's id (RangeRow::range_id) from its index in rows(), and back; -1 for none.
  int64_t id(int64_t index) const { return index < 0 ? -1 : static_cast<int64_t>(rows_[static_cast<size_t>(index)].range_id); }
  static int64_t index(int64_t id) { return id < 0 ? -1 : static_cast<int64_t>(static_cast<uint64_t>(id) & ((uint64_t{1} << 40) - 1)); }
  RangeCounters counters;

 private:
  int64_t on_thread(int64_t thread_id, int64_t ts_ns) const;
  std::vector<RangeRow> rows_;
  std::unordered_map<int64_t, std::vector<uint32_t>> by_thread_;  // thread -> ranges by start
};

}  // namespace sigmatrace::analysis

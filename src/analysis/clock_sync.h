// Host clocks that agree. Each process's TSC is mapped to its own host's CLOCK_REALTIME
// (clock_normalization.h); hosts' clocks differ by whatever their synchronisation left (a few
// microseconds with PTP, much more without), enough to turn a message's arrow backwards. A message
// cannot arrive before it was sent: with d = receive time - send time as recorded, every message
// from host x to host y says clock_y - clock_x <= d, and every one back says it >= -d. The
// smallest d of each direction in a time window bounds the difference from both sides; its middle
// (NTP's estimate: equal one-way latencies) is taken there, a line is fitted through the windows
// (offset and drift), and the hosts are tied to a reference host along the pairs that exchanged
// messages. The correction is an affine map per host with a positive slope: no timestamp moves
// against its own process's order.
//
// The messages are Full mode's verbs sends that consume a receive and the receive completions
// they produced, paired as the analysis pairs them into flows (the k-th such send on a QP with the
// k-th receive completion on its peer), collected in the first pass.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "format/chunk_codec.h"

namespace sigmatrace::analysis {

struct ExperimentModel;

enum class ClockSyncMode {
  automatic,  // correct when the messages prove the clocks apart (a message received before it was
              // sent); leave them alone otherwise
  always,     // correct whenever there is an estimate
  off,        // neither collected nor estimated
};
bool parse_clock_sync_mode(const std::string& text, ClockSyncMode* mode);  // auto, on, off
const char* clock_sync_mode_name(ClockSyncMode mode);

// One end of a message, as recorded: a send that consumes a receive (SEND, SEND_WITH_IMM,
// WRITE_WITH_IMM) or a receive completion, the seq-th of its kind on its QP number.
struct MessageStamp {
  uint64_t tsc = 0, seq = 0;
  uint32_t qpn = 0;
  bool receive = false;
};

// Collects one file's message ends in the first pass: every one of a QP's first 1024, then every
// 16th (both ends keep the same sequence numbers, so kept sends still meet kept receives), at most
// kMaxStampsPerFile.
class MessageStampCollector {
 public:
  static constexpr size_t kMaxStampsPerFile = size_t{1} << 21;
  static bool wants(uint16_t type);  // ibv_qp_create, ibv_send_wr, ibv_completion
  void on_event(const format::DecodedEvent& ev);
  std::vector<MessageStamp> stamps;
  uint64_t not_kept = 0;  // sampled out or over the limit (counted, not an error)

 private:
  struct Counts {
    uint64_t sends = 0, receives = 0;
  };
  std::unordered_map<uint32_t, Counts> by_qpn_;  // restarted when a QP of that number is created
  void keep(uint32_t qpn, uint64_t seq, uint64_t tsc, bool receive);
};

struct HostClockCorrection {
  std::string host;
  bool reference = false;  // the clock the others are set to
  bool estimated = false;  // tied to the reference through messages both ways
  double offset_ns = 0;    // how far ahead its clock read at the experiment's start (subtracted)
  double drift_ppm = 0;    // how fast it gained on the reference
  double bound_ns = 0;     // the estimate's uncertainty: half the smallest round trip it rests on
  uint64_t messages = 0;   // messages it exchanged with hosts it is tied to
};

struct ClockSyncResult {
  ClockSyncMode mode = ClockSyncMode::automatic;
  bool applied = false;
  std::string outcome;            // one line: what was done and why
  int64_t origin_ns = 0;          // offsets are at this time (the experiment's start)
  std::vector<HostClockCorrection> hosts;
  uint64_t messages = 0;          // paired messages between hosts
  uint64_t backward_before = 0;   // received before they were sent, with each host's own clock
  uint64_t backward_after = 0;    // ... after the correction (0 unless the bounds contradict)
  int64_t min_latency_before_ns = 0, min_latency_after_ns = 0;  // smallest receive - send
};

// Estimates the hosts' clock differences from the messages (stamps per process, by process id)
// and, when mode says so, folds the correction into every process's ClockModel and the times the
// model already holds (process spans, QPs, devices, memory regions, NVTX ranges).
ClockSyncResult synchronize_host_clocks(ExperimentModel* m, const std::vector<std::vector<MessageStamp>>& stamps, ClockSyncMode mode);

}  // namespace sigmatrace::analysis

// trace.sqlite as an OTF2 archive (docs/otf2.md), for Vampir, Scalasca and the OTF2 tools: written
// with Debian's libotf2 from the analysed experiment, so it holds exactly trace.sqlite's operations
// on the analysis' corrected clock.
//   locations: a process per location group (its host a system tree node), a location per traced
//     thread, one per GPU whose queues held GPU-initiated operations, and lanes for NCCL's calls;
//   one-sided operations: RMA records (RmaPut, RmaGet, RmaAtomic at the post, RmaOpCompleteNonBlocking
//     at the completion), the initiating QP as the window, the peer process as the remote rank;
//   operations that consume a receive (SEND, SEND_IMM, WRITE_IMM) and receives: messages (MpiIsend,
//     MpiIsendComplete; MpiIrecvRequest, MpiIrecv), tagged by their connection so that OTF2 pairs
//     them in the order RC delivers them;
//   NVTX push/pop ranges: regions entered and left on their thread; NCCL's calls: regions over their
//     network part (first post to last completion), on per-process lanes where calls overlap.
// Every process is a rank of one communicator ("processes"), in process_id order.
#pragma once
#include <cstdint>
#include <string>

namespace sigmatrace::exporter {

struct Otf2Counts {
  uint64_t locations = 0, puts = 0, gets = 0, atomics = 0, rma_completions = 0;
  uint64_t sends = 0, send_completions = 0, receive_requests = 0, receives = 0;
  uint64_t range_regions = 0, nccl_regions = 0;
};

// Writes DIR/otf2/traces.otf2 (and its definitions and event files) from DIR/trace.sqlite. False
// with *error (one line) when trace.sqlite is missing or unreadable, or OTF2 fails.
bool write_otf2(const std::string& experiment_dir, Otf2Counts* counts, std::string* error);

}  // namespace sigmatrace::exporter

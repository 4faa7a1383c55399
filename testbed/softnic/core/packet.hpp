// Wire packet format: a fixed transport header modelled on RoCE BTH/RETH/AETH/AtomicETH,
// followed by payload bytes. Packets travel over the shared-memory rings of wire_shm.
#pragma once
#include <cstdint>

namespace softnic {

enum class WireOp : uint8_t {
  Pad = 0,         // ring filler at the wrap point, carries nothing
  Send = 1,        // SEND / SEND_WITH_IMM (segmented, First/Last flags)
  Write = 2,       // RDMA_WRITE / RDMA_WRITE_WITH_IMM (segmented)
  ReadReq = 3,     // RDMA_READ request (no payload)
  ReadResp = 4,    // RDMA_READ response segment
  CmpSwap = 5,     // ATOMIC_CMP_AND_SWP request
  FetchAdd = 6,    // ATOMIC_FETCH_AND_ADD request
  AtomicResp = 7,  // original value of an atomic
  Ack = 8,         // cumulative acknowledgement up to msn
  Nak = 9,         // negative acknowledgement for msn (syndrome says why)
};

enum PacketFlags : uint8_t {
  kFirst = 1 << 0,
  kLast = 1 << 1,
  kHasImm = 1 << 2,
  kSolicited = 1 << 3,
  kDcConnect = 1 << 4,   // DC: the initiator starts a new exchange with this target at psn
};

// NAK syndromes (AETH-like).
enum class NakCode : uint16_t {
  None = 0,
  Rnr = 1,               // receiver not ready: no receive WQE
  RemoteAccess = 2,      // bad rkey, bounds, or permissions
  InvalidRequest = 3,    // opcode not allowed, or receive too small
  RemoteOperation = 4,   // responder QP in error
  QpUnreachable = 5,     // no such QP at the destination (a real NIC would time out)
};

struct alignas(64) PacketHeader {
  uint32_t record_bytes;  // header + payload, rounded up to 64; set by the ring
  WireOp op;
  uint8_t flags;
  uint16_t syndrome;      // NakCode on Nak; rnr timer code in the upper byte for Rnr
  uint32_t dst_qpn;
  uint32_t src_qpn;
  uint32_t psn;           // packet sequence number (go-back-N on the responder)
  uint32_t msn;           // message sequence number the packet belongs to / acknowledges
  uint32_t payload_len;
  uint32_t imm;           // network order, as the verbs API hands it over
  uint32_t rkey;
  uint32_t total_len;     // whole message length (max_msg_sz is 1 GiB)
  uint64_t raddr;         // remote address of this segment (Write/ReadReq/atomics)
  uint64_t arg0;          // compare value / add value / atomic result
  uint64_t arg1;          // swap value
  uint64_t arg2;          // CmpSwap: compare mask; FetchAdd: field boundary
  uint64_t arg3;          // CmpSwap: swap mask
  uint64_t dc_key;        // requests to a DC target: the initiator's access key
  uint8_t atomic_bytes;   // atomics: operand width, 4 or 8
  uint8_t reserved[39];
};
static_assert(sizeof(PacketHeader) == 128, "header is two cache lines");

inline uint8_t* payload(PacketHeader* h) { return reinterpret_cast<uint8_t*>(h + 1); }

}  // namespace softnic

// mlx5 send-queue formats: work-queue entries (WQEs) and their segments, the doorbell record,
// the 8-byte UAR doorbell, and completion-queue entries (CQEs). One definition for the three
// users: gda builds these on the GPU, softnic executes them, the profiler parses them.
// Layouts: ../shared/research/ibgda-nccl-calls.md §3.3-§3.8, checked against
// <infiniband/mlx5dv.h> by tests/mlx5 (static_asserts against the system header there).
// All multi-byte fields are big-endian in memory.
#pragma once
#include <cstdint>

#include "mlx5/common.hpp"

namespace sigmatrace::mlx5 {

// ---- Work-queue geometry ---------------------------------------------------------------------
constexpr uint32_t kWqeBbSize = 64;   // one WQE basic block (WQEBB)
constexpr uint32_t kDsUnit = 16;      // the "ds" count is in 16-byte units
constexpr uint32_t kSegsPerBb = kWqeBbSize / kDsUnit;

// ---- WQE opcodes (low byte of ctrl.opmod_idx_opcode) -----------------------------------------
enum Opcode : uint8_t {
  kOpNop = 0x00,
  kOpRdmaWrite = 0x08,
  kOpRdmaWriteImm = 0x09,
  kOpSend = 0x0a,
  kOpSendImm = 0x0b,
  kOpRdmaRead = 0x10,
  kOpAtomicCs = 0x11,
  kOpAtomicFa = 0x12,
  kOpAtomicMaskedCs = 0x14,
  kOpAtomicMaskedFa = 0x15,
  kOpDump = 0x23,
};
// opmod of the masked (extended) atomics: operand size.
constexpr uint8_t kOpmodExtAtomic4B = 0x08;
constexpr uint8_t kOpmodExtAtomic8B = 0x09;

// ctrl.fm_ce_se bits.
constexpr uint8_t kCtrlSolicited = 0x02;
constexpr uint8_t kCtrlCqUpdate = 0x08;   // generate a CQE for this WQE
constexpr uint8_t kCtrlFenceMask = 0xe0;  // fence mode (bits 7..5), one of:
constexpr uint8_t kFenceInitiatorSmall = 0x20;
constexpr uint8_t kFence = 0x40;          // wait for earlier READ and atomic responses
constexpr uint8_t kFenceStrongOrdering = 0x60;
constexpr uint8_t kFenceAndSmall = 0x80;

constexpr uint32_t kInlineFlag = 0x80000000u;  // inline segment byte_count flag

// ---- Segments ---------------------------------------------------------------------------------
struct CtrlSeg {               // 16 bytes, always first
  uint32_t opmod_idx_opcode;   // be32: [31:24] opmod, [23:8] WQE index, [7:0] opcode
  uint32_t qpn_ds;             // be32: [31:8] QPN, [5:0] ds (WQE size in 16-byte units)
  uint8_t signature;
  uint8_t stream_id[2];
  uint8_t fm_ce_se;
  uint32_t imm;
};
struct RaddrSeg {              // 16 bytes
  uint64_t raddr;              // be64
  uint32_t rkey;               // be32
  uint32_t reserved;
};
struct DataSeg {               // 16 bytes (scatter/gather pointer)
  uint32_t byte_count;         // be32
  uint32_t lkey;               // be32
  uint64_t addr;               // be64
};
struct InlineHdr {             // 4 bytes; the data follows immediately
  uint32_t byte_count;         // be32(len | kInlineFlag)
};
struct AtomicSeg {             // 16 bytes
  uint64_t swap_add;           // be64
  uint64_t compare;            // be64
};
// A DC initiator's WQE carries the target's address vector right after the control segment
// (not on NOP and DUMP): 16 bytes (compact) or, when dqp_dct bit 31 is set, the full 48.
struct AvSeg {                 // mlx5_wqe_av
  uint64_t dc_key;             // be64: the DC target's access key
  uint32_t dqp_dct;            // be32: [31] full AV follows, [23:0] DCT number
  uint8_t stat_rate_sl;        // [7:4] static rate, [3:0] SL
  uint8_t fl_mlid;             // [7] force loopback, [6:0] source path bits
  uint16_t rlid;               // be16: the target port's LID
  uint8_t reserved[4];         // the full AV only, from here on
  uint8_t rmac[6];
  uint8_t tclass;
  uint8_t hop_limit;
  uint32_t grh_gid_fl;         // be32: [30] GRH, [27:20] SGID index, [19:0] flow label
  uint8_t rgid[16];
};
constexpr uint32_t kAvCompactSize = 16;
constexpr uint32_t kAvFullSize = 48;
constexpr uint32_t kAvExtended = 0x80000000u;
constexpr uint32_t kDctNumberMask = 0xffffff;
static_assert(sizeof(CtrlSeg) == 16 && sizeof(RaddrSeg) == 16 && sizeof(DataSeg) == 16 &&
              sizeof(AtomicSeg) == 16 && sizeof(InlineHdr) == 4 && sizeof(AvSeg) == kAvFullSize);

MLX5_HD uint32_t ctrl_opmod_idx_opcode(uint8_t opmod, uint16_t idx, uint8_t opcode) {
  return be32((uint32_t(opmod) << 24) | (uint32_t(idx) << 8) | opcode);
}
MLX5_HD uint32_t ctrl_qpn_ds(uint32_t qpn, uint32_t ds) { return be32((qpn << 8) | (ds & 0x3f)); }

struct CtrlFields {
  uint8_t opmod, opcode, ds, fm_ce_se;
  uint16_t idx;
  uint32_t qpn;
};
MLX5_HD CtrlFields decode_ctrl(const CtrlSeg& c) {
  uint32_t a = be32(c.opmod_idx_opcode), b = be32(c.qpn_ds);
  return CtrlFields{uint8_t(a >> 24), uint8_t(a), uint8_t(b & 0x3f), c.fm_ce_se, uint16_t(a >> 8),
                    b >> 8};
}

// ---- Doorbells --------------------------------------------------------------------------------
// Doorbell record (DBR): 8 bytes; [0..3] RQ counter, [4..7] SQ counter (be32, 16-bit index).
constexpr uint32_t kDbrRecvIndex = 0;
constexpr uint32_t kDbrSendIndex = 1;   // 32-bit word index of the SQ counter
constexpr uint32_t kDbrSize = 8;

// UAR: in a 4 KiB UAR page the doorbell register is at offset 0x800; a doorbell is one 8-byte
// store of the first 8 bytes of a control segment: be32(pi << 8), be32(qpn << 8).
constexpr uint32_t kUarPageSize = 4096;
constexpr uint32_t kUarDoorbellOffset = 0x800;
constexpr uint32_t kUarTwinOffset = 0x100;  // the other half of a BlueFlame register pair: reg ^ 0x100
// Every register of a 4 KiB UAR page a writer may store to: its two BlueFlame registers (bfregs of
// 512 bytes, at 0x800 and 0xa00), each with its two halves, for send doorbells; and the CQ
// doorbell (arm requests) at 0x20.
constexpr uint32_t kUarSendRegisters[] = {0x800, 0x900, 0xa00, 0xb00};
constexpr uint32_t kUarCqDoorbellOffset = 0x20;

// The doorbell value as a little-endian 64-bit word (what one 8-byte store writes).
MLX5_HD uint64_t doorbell_value(uint16_t pi, uint32_t qpn) {
  return uint64_t(be32(uint32_t(pi) << 8)) | (uint64_t(be32(qpn << 8)) << 32);
}
struct Doorbell {
  uint16_t pi;    // producer index: the next free WQEBB (low 16 bits)
  uint32_t qpn;
  uint8_t opcode, ds;  // 0 in a GPU doorbell; a BlueFlame copy of a real ctrl segment may carry them
};
MLX5_HD Doorbell decode_doorbell(uint64_t v) {
  uint32_t lo = be32(uint32_t(v)), hi = be32(uint32_t(v >> 32));
  return Doorbell{uint16_t(lo >> 8), hi >> 8, uint8_t(lo), uint8_t(hi & 0x3f)};
}
// The WQEBB a doorbell says the queue is filled up to (the next free one). GPU stacks (NVSHMEM,
// NCCL) write it as the index with opcode and size 0; libmlx5 writes (and BlueFlame copies) the
// last WQE's control segment, whose index is that WQE's own: the next free one is past its size.
MLX5_HD uint16_t announced_index(const Doorbell& d) {
  if (d.opcode == 0 && d.ds == 0) return d.pi;
  return uint16_t(d.pi + (d.ds ? (uint32_t(d.ds) * kDsUnit + kWqeBbSize - 1) / kWqeBbSize : 1));
}

// ---- Completion queue entries (64 bytes) ------------------------------------------------------
constexpr uint32_t kCqeSize = 64;
enum CqeOpcode : uint8_t {
  kCqeReq = 0x0,
  kCqeRespWrImm = 0x1,
  kCqeRespSend = 0x2,
  kCqeRespSendImm = 0x3,
  kCqeReqErr = 0xd,
  kCqeRespErr = 0xe,
  kCqeInvalid = 0xf,
};
// Error syndromes (err CQE byte 55).
enum CqeSyndrome : uint8_t {
  kSyndLocalLengthErr = 0x01,
  kSyndLocalQpOpErr = 0x02,
  kSyndLocalProtErr = 0x04,
  kSyndWrFlushErr = 0x05,
  kSyndMwBindErr = 0x06,
  kSyndBadRespErr = 0x10,
  kSyndLocalAccessErr = 0x11,
  kSyndRemoteInvalReqErr = 0x12,
  kSyndRemoteAccessErr = 0x13,
  kSyndRemoteOpErr = 0x14,
  kSyndTransportRetryExcErr = 0x15,
  kSyndRnrRetryExcErr = 0x16,
  kSyndRemoteAbortedErr = 0x22,
};
// Byte offsets inside a 64-byte CQE (normal and error layouts share the tail).
constexpr uint32_t kCqeSrqnUidx = 32;      // be32
constexpr uint32_t kCqeByteCnt = 44;       // be32
constexpr uint32_t kCqeTimestamp = 48;     // be64
constexpr uint32_t kCqeHwErrSynd = 52;     // err CQE
constexpr uint32_t kCqeHwSyndType = 53;    // err CQE
constexpr uint32_t kCqeVendorErrSynd = 54; // err CQE
constexpr uint32_t kCqeSyndrome = 55;      // err CQE
constexpr uint32_t kCqeSopDropQpn = 56;    // be32: [31:24] (err: WQE opcode), [23:0] QPN
constexpr uint32_t kCqeWqeCounter = 60;    // be16
constexpr uint32_t kCqeSignature = 62;
constexpr uint32_t kCqeOpOwn = 63;         // [7:4] opcode, [0] owner

struct Cqe {
  uint8_t bytes[kCqeSize];
};

MLX5_HD uint8_t cqe_opcode(uint8_t op_own) { return op_own >> 4; }
MLX5_HD uint8_t cqe_owner(uint8_t op_own) { return op_own & 1; }

// Builds a CQE. owner is the parity bit of a normal ring ((ci >> log_size) & 1).
MLX5_HD void make_cqe(Cqe* cqe, uint8_t opcode, uint16_t wqe_counter, uint32_t qpn, uint32_t byte_cnt,
                      uint8_t wqe_opcode, uint8_t syndrome, uint8_t owner) {
  for (uint32_t i = 0; i < kCqeSize; ++i) cqe->bytes[i] = 0;
  uint32_t bc = be32(byte_cnt);
  for (int i = 0; i < 4; ++i) cqe->bytes[kCqeByteCnt + i] = uint8_t(bc >> (8 * i));
  uint32_t q = be32((uint32_t(wqe_opcode) << 24) | (qpn & 0xffffff));
  for (int i = 0; i < 4; ++i) cqe->bytes[kCqeSopDropQpn + i] = uint8_t(q >> (8 * i));
  cqe->bytes[kCqeSyndrome] = syndrome;
  cqe->bytes[kCqeWqeCounter] = uint8_t(wqe_counter >> 8);
  cqe->bytes[kCqeWqeCounter + 1] = uint8_t(wqe_counter);
  cqe->bytes[kCqeOpOwn] = uint8_t((opcode << 4) | (owner & 1));
}

// The last 32-bit word of a CQE read as one little-endian load (wqe_counter, signature, op_own):
// pollers read it with a single load so the counter and opcode are consistent.
struct CqeTail {
  uint16_t wqe_counter;
  uint8_t opcode, owner;
};
MLX5_HD CqeTail decode_cqe_tail(uint32_t word_at_60) {
  return CqeTail{uint16_t(((word_at_60 & 0xff) << 8) | ((word_at_60 >> 8) & 0xff)),
                 uint8_t((word_at_60 >> 28) & 0xf), uint8_t((word_at_60 >> 24) & 1)};
}

}  // namespace sigmatrace::mlx5

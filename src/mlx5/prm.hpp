// mlx5 PRM command layouts used by devx (mlx5dv_devx_general_cmd / obj_create / obj_modify):
// command opcodes, and each field as (bit offset, width) in the command buffer, with get/set
// helpers that follow the PRM's big-endian bit numbering. Layouts:
// ../shared/research/ibgda-nccl-calls.md §4. Absolute offsets are given from the start of the
// command's input or output buffer.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "mlx5/common.hpp"

namespace sigmatrace::mlx5::prm {

// A field: `bit` counts from the most significant bit of byte 0; width <= 32, or exactly 64.
struct Field {
  uint32_t bit;
  uint32_t width;
};

// A field of width <= 32 lies in the big-endian dword at byte 4*(bit/32).
MLX5_HD uint32_t get(const void* buf, Field f) {
  const uint8_t* p = static_cast<const uint8_t*>(buf);
  if (f.width == 64) {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v = (v << 8) | p[f.bit / 8 + i];
    return uint32_t(v);  // use get64 for the full value
  }
  const uint8_t* d = p + 4 * (f.bit / 32);
  uint32_t dw = (uint32_t(d[0]) << 24) | (uint32_t(d[1]) << 16) | (uint32_t(d[2]) << 8) | d[3];
  uint32_t shift = 32 - (f.bit % 32) - f.width;
  uint32_t mask = f.width == 32 ? 0xffffffffu : ((1u << f.width) - 1);
  return (dw >> shift) & mask;
}
MLX5_HD void set(void* buf, Field f, uint32_t value) {
  uint8_t* d = static_cast<uint8_t*>(buf) + 4 * (f.bit / 32);
  uint32_t dw = (uint32_t(d[0]) << 24) | (uint32_t(d[1]) << 16) | (uint32_t(d[2]) << 8) | d[3];
  uint32_t shift = 32 - (f.bit % 32) - f.width;
  uint32_t mask = f.width == 32 ? 0xffffffffu : ((1u << f.width) - 1);
  dw = (dw & ~(mask << shift)) | ((value & mask) << shift);
  d[0] = uint8_t(dw >> 24);
  d[1] = uint8_t(dw >> 16);
  d[2] = uint8_t(dw >> 8);
  d[3] = uint8_t(dw);
}
MLX5_HD uint64_t get64(const void* buf, Field f) {
  const uint8_t* p = static_cast<const uint8_t*>(buf) + f.bit / 8;
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | p[i];
  return v;
}
MLX5_HD void set64(void* buf, Field f, uint64_t value) {
  uint8_t* p = static_cast<uint8_t*>(buf) + f.bit / 8;
  for (int i = 7; i >= 0; --i) {
    p[i] = uint8_t(value);
    value >>= 8;
  }
}
// A field at `base_bit` + field offset (e.g. a QPC field inside a command).
constexpr Field at(uint32_t base_bit, Field f) { return Field{base_bit + f.bit, f.width}; }

// ---- Command opcodes --------------------------------------------------------------------------
enum Command : uint16_t {
  kQueryHcaCap = 0x100,
  kCreateCq = 0x400,
  kDestroyCq = 0x401,
  kQueryCq = 0x402,
  kCreateQp = 0x500,
  kDestroyQp = 0x501,
  kRst2Init = 0x502,
  kInit2Rtr = 0x503,
  kRtr2Rts = 0x504,
  kRts2Rts = 0x505,
  k2Err = 0x507,
  k2Rst = 0x50a,
  kQueryQp = 0x50b,
  kInit2Init = 0x50e,
};

// Command status (output byte 0).
enum Status : uint8_t {
  kStatusOk = 0x0,
  kStatusBadOp = 0x2,
  kStatusBadParam = 0x3,
  kStatusBadSysState = 0x4,
  kStatusBadResource = 0x5,
  kStatusBadResourceState = 0x9,
  kStatusBadInputLen = 0x50,
  kStatusBadOutputLen = 0x51,
};

// ---- Headers common to every command ----------------------------------------------------------
constexpr Field kInOpcode{0x00, 16};
constexpr Field kInUid{0x10, 16};
constexpr Field kInOpMod{0x30, 16};
constexpr Field kOutStatus{0x00, 8};
constexpr Field kOutSyndrome{0x20, 32};
constexpr size_t kOutHeaderSize = 16;

// QUERY_HCA_CAP: op_mod = (cap_type << 1) | current.
constexpr uint16_t kCapGeneral = 0x0;
constexpr uint16_t kCapAtomic = 0x3;
constexpr uint16_t kCapRoce = 0x4;
constexpr size_t kQueryHcaCapInSize = 16;
constexpr size_t kQueryHcaCapOutSize = 4112;
constexpr uint32_t kCapBase = 0x80;   // capability struct starts at output byte 16
namespace cap {  // absolute bit offsets in query_hca_cap_out
constexpr Field vhca_id{kCapBase + 0x030, 16};
constexpr Field log_max_srq_sz{kCapBase + 0x080, 8};
constexpr Field log_max_qp_sz{kCapBase + 0x088, 8};
constexpr Field log_max_qp{kCapBase + 0x09b, 5};
constexpr Field log_max_srq{kCapBase + 0x0ab, 5};
constexpr Field log_max_cq_sz{kCapBase + 0x0c8, 8};
constexpr Field log_max_cq{kCapBase + 0x0db, 5};
constexpr Field log_max_ra_req_dc{kCapBase + 0x12a, 6};
constexpr Field log_max_ra_res_dc{kCapBase + 0x13a, 6};
constexpr Field log_max_ra_req_qp{kCapBase + 0x14a, 6};
constexpr Field log_max_ra_res_qp{kCapBase + 0x15a, 6};
constexpr Field gid_table_size{kCapBase + 0x170, 16};
constexpr Field pkey_table_size{kCapBase + 0x190, 16};
constexpr Field port_type{kCapBase + 0x1b6, 2};   // 0 IB, 1 Ethernet
constexpr Field num_ports{kCapBase + 0x1b8, 8};
constexpr Field log_max_msg{kCapBase + 0x1c3, 5};
constexpr Field cqe_version{kCapBase + 0x1fc, 4};
constexpr Field compact_address_vector{kCapBase + 0x200, 1};
constexpr Field dct{kCapBase + 0x21a, 1};
constexpr Field roce{kCapBase + 0x21d, 1};
constexpr Field atomic{kCapBase + 0x21e, 1};
constexpr Field rc{kCapBase + 0x23f, 1};
constexpr Field uar_4k{kCapBase + 0x240, 1};
constexpr Field log_bf_reg_size{kCapBase + 0x26b, 5};
constexpr Field max_wqe_sz_sq{kCapBase + 0x290, 16};
constexpr Field max_wqe_sz_rq{kCapBase + 0x2b0, 16};
constexpr Field log_max_pd{kCapBase + 0x32b, 5};
// atomic capability subset
constexpr Field atomic_req_8B_endianness_mode{kCapBase + 0x040, 2};
constexpr Field supported_atomic_req_8B_endianness_mode_1{kCapBase + 0x046, 1};
constexpr Field atomic_operations{kCapBase + 0x090, 16};
constexpr Field atomic_size_qp{kCapBase + 0x0b0, 16};
constexpr Field atomic_size_dc{kCapBase + 0x0d0, 16};
}  // namespace cap
// atomic_operations bits and atomic_size_* bits.
constexpr uint32_t kAtomicOpCas = 0x1, kAtomicOpFa = 0x2, kAtomicOpMaskedCas = 0x4,
                   kAtomicOpMaskedFa = 0x8;
constexpr uint32_t kAtomicSize4 = 0x4, kAtomicSize8 = 0x8;

// ---- CREATE_CQ ----------------------------------------------------------------------------------
constexpr size_t kCreateCqInSize = 272;
constexpr size_t kCreateCqOutSize = 16;
constexpr uint32_t kCqcBase = 0x80;
namespace cq {
constexpr Field cq_umem_offset{0x280, 64};
constexpr Field cq_umem_id{0x2c0, 32};
constexpr Field cq_umem_valid{0x2e0, 1};
constexpr Field out_cqn{0x48, 24};
constexpr Field in_cqn{0x48, 24};   // DESTROY_CQ / QUERY_CQ input
// cq context, absolute in create_cq_in
constexpr Field status{kCqcBase + 0x000, 4};
constexpr Field dbr_umem_valid{kCqcBase + 0x006, 1};
constexpr Field cqe_sz{kCqcBase + 0x008, 3};   // 0: 64-byte CQEs
constexpr Field cc{kCqcBase + 0x00b, 1};       // collapsed: every CQE at entry 0
constexpr Field oi{kCqcBase + 0x00e, 1};       // overrun ignore
constexpr Field st{kCqcBase + 0x014, 4};
constexpr Field dbr_umem_id{kCqcBase + 0x020, 32};
constexpr Field page_offset{kCqcBase + 0x054, 6};
constexpr Field log_cq_size{kCqcBase + 0x063, 5};
constexpr Field uar_page{kCqcBase + 0x068, 24};
constexpr Field cq_period{kCqcBase + 0x084, 12};
constexpr Field cq_max_count{kCqcBase + 0x090, 16};
constexpr Field c_eqn{kCqcBase + 0x0b8, 8};
constexpr Field log_page_size{kCqcBase + 0x0c3, 5};
constexpr Field dbr_addr{kCqcBase + 0x1c0, 64};
}  // namespace cq

// ---- CREATE_QP and the QP state transitions -------------------------------------------------------
constexpr size_t kCreateQpInSize = 272;
constexpr size_t kCreateQpOutSize = 16;
constexpr size_t kModifyQpInSize = 272;
constexpr size_t kModifyQpOutSize = 16;
constexpr size_t kQueryQpOutSize = 272;
constexpr uint32_t kQpcBase = 0xc0;        // qpc in create_qp_in, modify *_in and query_qp_out
constexpr uint32_t kAdsBase = kQpcBase + 0xc0;  // primary address path
namespace qp {
constexpr Field opt_param_mask{0x80, 32};
constexpr Field wq_umem_offset{0x800, 64};
constexpr Field wq_umem_id{0x840, 32};
constexpr Field wq_umem_valid{0x860, 1};
constexpr Field out_qpn{0x48, 24};
constexpr Field in_qpn{0x48, 24};           // modify / destroy / query input
// qpc, absolute
constexpr Field state{kQpcBase + 0x000, 4};
constexpr Field st{kQpcBase + 0x008, 8};
constexpr Field pm_state{kQpcBase + 0x013, 2};
constexpr Field pd{kQpcBase + 0x028, 24};
constexpr Field mtu{kQpcBase + 0x040, 3};
constexpr Field log_msg_max{kQpcBase + 0x043, 5};
constexpr Field log_rq_size{kQpcBase + 0x049, 4};
constexpr Field log_rq_stride{kQpcBase + 0x04d, 3};
constexpr Field no_sq{kQpcBase + 0x050, 1};
constexpr Field log_sq_size{kQpcBase + 0x051, 4};
constexpr Field counter_set_id{kQpcBase + 0x060, 8};
constexpr Field uar_page{kQpcBase + 0x068, 24};
constexpr Field user_index{kQpcBase + 0x088, 24};
constexpr Field log_page_size{kQpcBase + 0x0a3, 5};
constexpr Field remote_qpn{kQpcBase + 0x0a8, 24};
constexpr Field log_ack_req_freq{kQpcBase + 0x380, 4};
constexpr Field log_sra_max{kQpcBase + 0x388, 3};
constexpr Field retry_count{kQpcBase + 0x38d, 3};
constexpr Field rnr_retry{kQpcBase + 0x390, 3};
constexpr Field next_send_psn{kQpcBase + 0x3c8, 24};
constexpr Field cqn_snd{kQpcBase + 0x3e8, 24};
constexpr Field log_rra_max{kQpcBase + 0x488, 3};
constexpr Field atomic_mode{kQpcBase + 0x48c, 4};
constexpr Field rre{kQpcBase + 0x490, 1};
constexpr Field rwe{kQpcBase + 0x491, 1};
constexpr Field rae{kQpcBase + 0x492, 1};
constexpr Field page_offset{kQpcBase + 0x494, 6};
constexpr Field min_rnr_nak{kQpcBase + 0x4a3, 5};
constexpr Field next_rcv_psn{kQpcBase + 0x4a8, 24};
constexpr Field cqn_rcv{kQpcBase + 0x4e8, 24};
constexpr Field dbr_addr{kQpcBase + 0x500, 64};
constexpr Field q_key{kQpcBase + 0x540, 32};
constexpr Field rq_type{kQpcBase + 0x565, 3};
constexpr Field srqn_rmpn_xrqn{kQpcBase + 0x568, 24};
constexpr Field cs_req{kQpcBase + 0x630, 8};
constexpr Field cs_res{kQpcBase + 0x638, 8};
constexpr Field dc_access_key{kQpcBase + 0x640, 64};
constexpr Field dbr_umem_valid{kQpcBase + 0x683, 1};
constexpr Field dbr_umem_id{kQpcBase + 0x720, 32};
// primary address path, absolute
constexpr Field fl{kAdsBase + 0x000, 1};
constexpr Field pkey_index{kAdsBase + 0x010, 16};
constexpr Field grh{kAdsBase + 0x028, 1};
constexpr Field mlid{kAdsBase + 0x029, 7};
constexpr Field rlid{kAdsBase + 0x030, 16};
constexpr Field ack_timeout{kAdsBase + 0x040, 5};
constexpr Field src_addr_index{kAdsBase + 0x048, 8};
constexpr Field stat_rate{kAdsBase + 0x054, 4};
constexpr Field hop_limit{kAdsBase + 0x058, 8};
constexpr Field tclass{kAdsBase + 0x064, 8};
constexpr Field flow_label{kAdsBase + 0x06c, 20};
constexpr uint32_t kRgidRipByte = (kAdsBase + 0x080) / 8;  // 16 raw bytes
constexpr Field dscp{kAdsBase + 0x10a, 6};
constexpr Field udp_sport{kAdsBase + 0x110, 16};
constexpr Field eth_prio{kAdsBase + 0x121, 3};
constexpr Field sl{kAdsBase + 0x124, 4};
constexpr Field vhca_port_num{kAdsBase + 0x128, 8};
constexpr uint32_t kRmacByte = (kAdsBase + 0x130) / 8;     // 6 raw bytes
}  // namespace qp

// Enumerations.
constexpr uint32_t kQpStRc = 0x0, kQpStUc = 0x1, kQpStUd = 0x2, kQpStDci = 0x5;
constexpr uint32_t kPmStateMigrated = 0x3;
constexpr uint32_t kRqTypeRegular = 0, kRqTypeSrq = 1, kRqTypeZero = 3;
enum QpState : uint32_t { kQpsRst = 0, kQpsInit = 1, kQpsRtr = 2, kQpsRts = 3, kQpsSqEr = 4,
                          kQpsSqd = 5, kQpsErr = 6 };
// UAR allocation types (mlx5dv_devx_alloc_uar flags).
constexpr uint32_t kUarAllocBf = 0, kUarAllocNc = 1, kUarAllocNcDedicated = 1u << 31;

// The CREATE_QP mailbox of an RC QP without a receive queue of its own, its send queue and
// doorbell record in umems (NVSHMEM IBGDA's layout): what gda builds for its GPU threads and the
// host-memory devx test endpoints build for theirs. `in` must be zeroed, kCreateQpInSize bytes.
struct RcQpMailbox {
  uint32_t pd, uar_page, cqn, log_sq_size, user_index, wq_umem_id, dbr_umem_id;
  uint64_t wq_umem_offset, dbr_offset;
};
inline void build_create_rc_qp(void* in, const RcQpMailbox& m) {
  set(in, kInOpcode, kCreateQp);
  set(in, qp::st, kQpStRc);
  set(in, qp::pm_state, kPmStateMigrated);
  set(in, qp::pd, m.pd);
  set(in, qp::uar_page, m.uar_page);
  set(in, qp::rq_type, kRqTypeZero);
  set(in, qp::cqn_snd, m.cqn);
  set(in, qp::cqn_rcv, m.cqn);
  set(in, qp::log_sq_size, m.log_sq_size);
  set(in, qp::user_index, m.user_index);
  set(in, qp::dbr_umem_valid, 1);
  set(in, qp::dbr_umem_id, m.dbr_umem_id);
  set64(in, qp::dbr_addr, m.dbr_offset);
  set(in, qp::wq_umem_valid, 1);
  set(in, qp::wq_umem_id, m.wq_umem_id);
  set64(in, qp::wq_umem_offset, m.wq_umem_offset);
}

}  // namespace sigmatrace::mlx5::prm

// See ibv_names.h.
#include "analysis/ibv_names.h"

#include "format/event_types.h"

#include <bit>

namespace sigmatrace::analysis {

const char* op_class_name(unsigned op) {
  static const char* const names[kOpClasses] = {
      "WRITE",   "WRITE_IMM", "SEND",     "SEND_IMM", "READ",      "ATOMIC_CS", "ATOMIC_FA",
      "LOCAL_INV", "BIND_MW", "SEND_INV", "TSO",      "DRIVER1",   "OPCODE_12", "OPCODE_13",
      "OPCODE_14", "ATOMIC_WRITE", "RECV", "MIXED",   "UNKNOWN",   "NOP"};
  if (op >= kOpClasses) return "UNKNOWN";
  return names[op];
}

unsigned op_class_of_wr_opcode(uint64_t opcode) { return opcode < 16 ? static_cast<unsigned>(opcode) : unsigned{kOpUnknown}; }

unsigned op_class_of_mask(uint64_t mask) {
  if (mask == 0) return kOpUnknown;
  if (std::popcount(mask) > 1) return kOpMixed;
  return op_class_of_wr_opcode(static_cast<uint64_t>(std::countr_zero(mask)));
}

unsigned op_class_of_mlx5_opcode(uint64_t opcode) {
  switch (opcode) {  // MLX5_OPCODE_* of a send WQE's control segment
    case 0x08: return kOpWrite;
    case 0x09: return kOpWriteImm;
    case 0x0a: return kOpSend;
    case 0x0b: return kOpSendImm;
    case 0x10: return kOpRead;
    case 0x11: case 0x14: return kOpAtomicCs;
    case 0x12: case 0x15: return kOpAtomicFa;
    case 0x00: case 0x23: return kOpNop;
    default: return kOpUnknown;
  }
}

bool op_moves_bytes_out(unsigned op) {
  switch (op) {
    case kOpRead: case kOpLocalInv: case kOpBindMw: case kOpRecv: case kOpUnknown: case kOpNop: return false;
    default: return true;
  }
}

bool op_moves_data(unsigned op, uint64_t bytes) {
  switch (op) {
    case kOpWrite: case kOpWriteImm: case kOpSend: case kOpSendImm: case kOpRead: return bytes > format::kControlPutMaxBytes;
    default: return false;
  }
}

bool op_consumes_receive(unsigned op) {
  return op == kOpSend || op == kOpSendImm || op == kOpWriteImm || op == kOpSendInv;
}

std::string wc_opcode_name(uint64_t opcode) {
  switch (opcode) {
    case 0: return "SEND";
    case 1: return "RDMA_WRITE";
    case 2: return "RDMA_READ";
    case 3: return "COMP_SWAP";
    case 4: return "FETCH_ADD";
    case 5: return "BIND_MW";
    case 6: return "LOCAL_INV";
    case 7: return "TSO";
    case 8: return "ATOMIC_WRITE";
    case kWcRecv: return "RECV";
    case kWcRecvRdmaWithImm: return "RECV_RDMA_WITH_IMM";
    default: return "WC_OPCODE_" + std::to_string(opcode);
  }
}

std::string wc_status_name(uint64_t status) {
  static const char* const names[] = {
      "SUCCESS",        "LOC_LEN_ERR",     "LOC_QP_OP_ERR",     "LOC_EEC_OP_ERR",   "LOC_PROT_ERR",
      "WR_FLUSH_ERR",   "MW_BIND_ERR",     "BAD_RESP_ERR",      "LOC_ACCESS_ERR",   "REM_INV_REQ_ERR",
      "REM_ACCESS_ERR", "REM_OP_ERR",      "RETRY_EXC_ERR",     "RNR_RETRY_EXC_ERR", "LOC_RDD_VIOL_ERR",
      "REM_INV_RD_REQ_ERR", "REM_ABORT_ERR", "INV_EECN_ERR",    "INV_EEC_STATE_ERR", "FATAL_ERR",
      "RESP_TIMEOUT_ERR", "GENERAL_ERR"};
  if (status < sizeof names / sizeof names[0]) return names[status];
  return "WC_STATUS_" + std::to_string(status);
}

std::string qp_type_name(uint64_t type) {
  switch (type) {
    case 0: return "?";  // not recorded (aggregate mode knows a QP only from its counters)
    case 2: return "RC";
    case 3: return "UC";
    case 4: return "UD";
    case 8: return "RAW_PACKET";
    case 9: return "XRC_SEND";
    case 10: return "XRC_RECV";
    case 0xff: return "DRIVER";
    case sigmatrace::format::kQpTypeDcInitiator: return "DCI";
    case sigmatrace::format::kQpTypeDcTarget: return "DCT";
    default: return "QPT_" + std::to_string(type);
  }
}

std::string qp_state_name(uint64_t state) {
  static const char* const names[] = {"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"};
  if (state < 7) return names[state];
  return "STATE_" + std::to_string(state);
}

std::string ibv_call_name(uint64_t call) {
  static const char* const names[] = {"",           "open_device", "alloc_pd",      "reg_mr",        "create_cq",
                                      "create_qp",  "modify_qp",   "destroy_qp",    "post_send",     "post_recv",
                                      "post_srq_recv", "poll_cq",  "create_srq",    "dereg_mr",      "destroy_cq",
                                      "query_port", "req_notify_cq", "get_cq_event", "close_device", "dealloc_pd",
                                      "destroy_srq", "get_async_event", "reg_dmabuf_mr"};
  if (call >= 1 && call < sizeof names / sizeof names[0]) return names[call];
  return "call_" + std::to_string(call);
}

}  // namespace sigmatrace::analysis

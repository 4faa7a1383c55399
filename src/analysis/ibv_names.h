// libibverbs constants the analysis interprets (values of enum ibv_wr_opcode, ibv_wc_opcode,
// ibv_wc_status, ibv_qp_type, ibv_qp_state as defined by rdma-core's verbs.h, which is not a build
// dependency here) and the readable names used in every output (SQL, JSON, Perfetto, report).
#pragma once
#include <cstdint>
#include <string>

namespace sigmatrace::analysis {

// Operation classes of the analysis: the ibv_wr_opcode values 0..15 as they are, then receives and
// "several opcodes in one call" (Simple mode, opcode_mask with more than one bit).
enum OpClass : uint8_t {
  kOpWrite = 0, kOpWriteImm = 1, kOpSend = 2, kOpSendImm = 3, kOpRead = 4, kOpAtomicCs = 5, kOpAtomicFa = 6,
  kOpLocalInv = 7, kOpBindMw = 8, kOpSendInv = 9, kOpTso = 10, kOpDriver1 = 11, kOpAtomicWrite = 15,
  kOpRecv = 16, kOpMixed = 17, kOpUnknown = 18, kOpNop = 19,
  kOpClasses = 20,
};

constexpr uint64_t kWcRecv = 128, kWcRecvRdmaWithImm = 129;

const char* op_class_name(unsigned op);             // "WRITE", "WRITE_IMM", "RECV", "MIXED", ...
unsigned op_class_of_wr_opcode(uint64_t opcode);      // kOpUnknown for values outside ibv_wr_opcode
unsigned op_class_of_mask(uint64_t opcode_mask);      // single bit -> that opcode, several -> kOpMixed
unsigned op_class_of_mlx5_opcode(uint64_t opcode);    // a WQE's: masked atomics are CS / FA, NOP and DUMP kOpNop
// True for operations whose bytes travel from the initiator to the target (all but READ and the
// local ones). READ moves bytes from the target to the initiator.
bool op_moves_bytes_out(unsigned op);
// True for the sends that consume a receive WR at the peer (SEND*, WRITE_WITH_IMM): these are matched.
bool op_consumes_receive(unsigned op);
// True for operations that move payload (a WRITE, READ or SEND of more than a flag's size); the
// others only signal (atomics, NOPs, puts of at most 8 bytes): the rule of a doorbell's wqe_class.
bool op_moves_data(unsigned op, uint64_t bytes);

std::string wc_opcode_name(uint64_t opcode);  // "SEND", "RDMA_WRITE", "RECV", "RECV_RDMA_WITH_IMM", ...
std::string wc_status_name(uint64_t status);  // "SUCCESS", "WR_FLUSH_ERR", ...
std::string qp_type_name(uint64_t type);      // "RC", "UC", "UD", ...
std::string qp_state_name(uint64_t state);    // "RESET", "INIT", "RTR", "RTS", ...
std::string ibv_call_name(uint64_t call);     // format::IbvCall as "post_send", ...

}  // namespace sigmatrace::analysis

// devx emulation inside softnic's libmlx5: UAR doorbell pages, user memory (umem) registrations,
// and CQ/QP objects created and moved through their states by PRM commands, exactly as a
// GPU-initiated stack (NVSHMEM IBGDA, NCCL GIN) drives a ConnectX NIC.
//
// A devx QP is backed by an ordinary softnic RC QP (created through softnic's own verbs), so
// transport, responder execution (into host or GPU memory) and errors are softnic's. What devx
// adds is the mlx5 front end: an engine thread watches every UAR page for 8-byte doorbells,
// reads the WQE basic blocks up to the doorbell's producer index from the SQ (GPU memory through
// the CUDA driver, host memory directly), executes them as work requests, and writes mlx5 CQEs
// into the CQ buffer in completion order. Formats: src/mlx5.
#pragma once
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

namespace softnic::devx {

struct Umem {
  mlx5dv_devx_umem pub;  // must stay first
  ibv_context* ctx;
  uint64_t addr;
  size_t size;
  bool gpu = false;
  void* cu_ctx = nullptr;
  int refs = 0;
};

struct Uar {
  mlx5dv_devx_uar pub;  // must stay first
  ibv_context* ctx;
  void* page;
  uint64_t last[4] = {};  // last doorbell value seen in each send register (m5::kUarSendRegisters)
  int refs = 0;           // QPs created on it
};

// Count, sum and maximum of one stage's duration (SOFTNIC_DEVX_STATS=1 prints them).
struct StageTime {
  uint64_t n = 0, sum_ns = 0, max_ns = 0;
  void add(uint64_t ns) {
    n++;
    sum_ns += ns;
    if (ns > max_ns) max_ns = ns;
  }
};

struct Cq {
  uint32_t cqn;
  ibv_context* ctx;
  Umem* umem;
  uint64_t off;
  uint32_t log_size;
  bool collapsed;
  uint64_t produced = 0;  // CQEs written so far
  int refs = 0;
  // The newest CQE written (state dumps): its wqe_counter, opcode and when.
  uint16_t last_wqe_counter = 0;
  uint8_t last_opcode = 0;
  uint64_t last_write_ns = 0;
};

// One WQE from the doorbell until its completion is retired (in SQ order).
struct Pending {
  uint64_t seq;
  uint16_t idx;         // WQE index (WQEBB counter) reported as wqe_counter
  uint8_t opcode;       // WQE opcode
  bool signal;          // CQ_UPDATE
  bool done = false;
  uint8_t syndrome = 0; // 0: success
  uint32_t byte_cnt = 0;
  uint64_t posted_ns = 0;  // when it went to the transport
};

// What a WQE asked for, kept for state dumps: the last kWqeHistory WQEs of a QP show whether a
// write went where the program meant it to (a barrier flag, say) with the value it meant.
struct WqeRecord {
  uint16_t idx = 0;
  uint8_t opcode = 0;
  uint32_t rkey = 0;
  uint64_t raddr = 0;
  uint64_t first_word = 0;  // inline data's first 8 bytes, or the first SGE's address
  uint32_t length = 0;
  uint32_t dct = 0;         // a DCI's WQE: its target
  uint64_t read_ns = 0;     // when the engine read it
};
constexpr uint32_t kWqeHistory = 8;

struct Qp {
  uint32_t qpn = 0;
  bool dci = false;         // a DC initiator: every WQE names its target in an address vector
  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  ibv_qp* qp = nullptr;    // the softnic RC QP doing the transport
  ibv_cq* icq = nullptr;   // its completions (every WR is signalled internally)
  Cq* scq = nullptr;
  Umem* wq = nullptr;
  uint64_t wq_off = 0;
  uint32_t log_sq = 0;
  Umem* dbr = nullptr;
  uint64_t dbr_off = 0;
  Uar* uar = nullptr;
  uint32_t user_index = 0;
  uint32_t state = 0;       // prm::QpState
  uint32_t remote_qpn = 0;
  uint16_t db_pi = 0;       // latest producer index rung
  uint16_t consumed = 0;    // next WQEBB to execute
  bool broken = false;      // a WQE failed: later WQEs are flushed
  bool in_error = false;
  uint64_t next_seq = 1;
  std::deque<Pending> pending;
  uint64_t doorbells = 0, wqes = 0;  // statistics
  uint64_t last_progress_ns = 0;     // a doorbell, WQE or completion last changed this QP
  uint64_t stale_wqe_reads = 0;      // reads of a slot whose control segment named another index
  uint64_t stale_since_ns = 0;       // the slot at `consumed` has read stale since then (0: no)
  uint64_t stray_completions = 0;    // transport completions that matched no pending WQE
  uint64_t recovered_doorbells = 0;  // doorbells lost to another QP's store on a shared register, taken from the record
  bool stall_reported = false;       // SOFTNIC_DEBUG=2 dumped this stall already
  StageTime wqe_read, transport, cqe_write;  // SQ copy, post -> transport completion, CQE copy
  // SOFTNIC_WQE_LOG (wqe_oracle.hpp): what this QP executed.
  struct OpTally {
    uint64_t wqes = 0, bytes = 0;
  };
  static constexpr uint32_t kOpcodes = 0x24;  // up to DUMP (0x23)
  OpTally executed[kOpcodes];
  uint64_t executed_digest = 0, rejected = 0;
  bool oracle_written = false;
  WqeRecord history[kWqeHistory];    // the WQEs executed last, the newest at (history_n - 1) % kWqeHistory
  uint64_t history_n = 0;
};

struct Obj;  // mlx5dv_devx_obj

// Everything below is guarded by mu().
std::mutex& mu();
std::vector<Uar*>& uars();
std::vector<Qp*>& qps();
Qp* find_qp(uint32_t qpn);

// Engine (devx_engine.cpp).
void engine_start();            // starts the watcher thread if not running
void engine_stop_if_idle();     // stops it when no UAR is left
// One round of the engine: doorbells, WQE execution, completions. true if anything happened.
// Caller holds mu(). Public so tests can drive it deterministically.
bool engine_round();
void qp_reset(Qp* q);           // forget queued work (2RST)

// SOFTNIC_DEBUG is a set of bits: 1 (=1 or 3) prints a line per devx command, UAR, umem,
// rejected WQE and failed completion; 2 (=2 or 3) dumps the engine state (devx_debug.cpp) on
// SIGUSR2, when a QP with work has made no progress for kStallDumpNs, and when a GPU copy has
// been in flight for kStuckCopyDumpNs.
bool debug();
bool dumps_enabled();
int debug_level();
void log(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
constexpr uint64_t kStallDumpNs = 5'000'000'000ull;
constexpr uint64_t kStuckCopyDumpNs = 2'000'000'000ull;
uint64_t now_ns();

// State dumps (devx_debug.cpp). dump_state reads the engine's state without its lock when it
// cannot have it (the engine may be stuck holding it: that is what the dump is for) and may run
// in a signal handler (in_signal_handler: then it asks the CUDA driver nothing and allocates
// nothing).
void dump_state(const char* why, bool in_signal_handler);
// Installs the SIGUSR2 handler (dump + every thread's backtrace) and starts a watch thread that
// dumps once per stall. Called when the engine starts with dumps enabled.
void start_dump_watch();
// SOFTNIC_DEVX_STATS=1: a QP's stage times when it is destroyed, the engine's and the GPU copies
// at engine stop.
bool stats_enabled();
void print_qp_stats(const Qp* q);
// SOFTNIC_WQE_LOG: writes q's line once (at destroy, or at exit for QPs still alive).
void write_wqe_oracle(Qp* q);
void print_engine_stats();
struct EngineClock {             // the engine loop's rhythm, for dumps and the stats
  uint64_t rounds = 0;
  uint64_t last_round_ns = 0;
  StageTime gap;                 // time between consecutive rounds while spinning
};
EngineClock& engine_clock();

}  // namespace softnic::devx

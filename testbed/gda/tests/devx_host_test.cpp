// devx over softnic without a GPU: SQs, CQs and doorbell records in host memory, driven by a CPU
// thread through the same path a GPU thread takes (WQE stores, doorbell record, one 8-byte
// doorbell store to the UAR page). Checks PRM decoding, WQE execution (WRITE, inline WRITE,
// READ, CAS, FA, NOP), CQ_UPDATE, collapsed and ring CQs (owner parity, wrap), error CQEs with
// syndromes and flushes, and the src/mlx5 layouts against <infiniband/mlx5dv.h>.
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "gda/device.cuh"
#include "mlx5/prm.hpp"
#include "mlx5/wqe.hpp"
#include "host_endpoint.hpp"

using namespace gda_host;

namespace m5 = sigmatrace::mlx5;
namespace prm = sigmatrace::mlx5::prm;

#define CHECK HOST_CHECK
#define REQUIRE HOST_REQUIRE

// ---- src/mlx5 against the system header -------------------------------------------------------
static void check_layouts() {
  static_assert(sizeof(m5::CtrlSeg) == sizeof(mlx5_wqe_ctrl_seg));
  static_assert(offsetof(m5::CtrlSeg, qpn_ds) == offsetof(mlx5_wqe_ctrl_seg, qpn_ds));
  static_assert(offsetof(m5::CtrlSeg, fm_ce_se) == offsetof(mlx5_wqe_ctrl_seg, fm_ce_se));
  static_assert(offsetof(m5::CtrlSeg, imm) == offsetof(mlx5_wqe_ctrl_seg, imm));
  static_assert(sizeof(m5::RaddrSeg) == sizeof(mlx5_wqe_raddr_seg));
  static_assert(offsetof(m5::RaddrSeg, rkey) == offsetof(mlx5_wqe_raddr_seg, rkey));
  static_assert(sizeof(m5::DataSeg) == sizeof(mlx5_wqe_data_seg));
  static_assert(offsetof(m5::DataSeg, lkey) == offsetof(mlx5_wqe_data_seg, lkey));
  static_assert(offsetof(m5::DataSeg, addr) == offsetof(mlx5_wqe_data_seg, addr));
  static_assert(sizeof(m5::AtomicSeg) == sizeof(mlx5_wqe_atomic_seg));
  static_assert(offsetof(m5::AtomicSeg, compare) == offsetof(mlx5_wqe_atomic_seg, compare));
  static_assert(m5::kCqeWqeCounter == offsetof(mlx5_cqe64, wqe_counter));
  static_assert(m5::kCqeOpOwn == offsetof(mlx5_cqe64, op_own));
  static_assert(m5::kCqeByteCnt == offsetof(mlx5_cqe64, byte_cnt));
  static_assert(m5::kCqeSopDropQpn == offsetof(mlx5_cqe64, sop_drop_qpn));
  static_assert(m5::kCqeSyndrome == offsetof(mlx5_err_cqe, syndrome));
  static_assert(m5::kCqeVendorErrSynd == offsetof(mlx5_err_cqe, vendor_err_synd));
  static_assert(m5::kCtrlCqUpdate == MLX5_WQE_CTRL_CQ_UPDATE);
  static_assert(m5::kInlineFlag == MLX5_INLINE_SEG);
  static_assert(int(m5::kOpRdmaRead) == int(MLX5_OPCODE_RDMA_READ) && int(m5::kOpAtomicFa) == int(MLX5_OPCODE_ATOMIC_FA) &&
                int(m5::kOpAtomicMaskedCs) == int(MLX5_OPCODE_ATOMIC_MASKED_CS));
  static_assert(int(m5::kSyndRemoteAccessErr) == int(MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR) &&
                int(m5::kSyndWrFlushErr) == int(MLX5_CQE_SYNDROME_WR_FLUSH_ERR));
  static_assert(m5::kDbrSendIndex == MLX5_SND_DBR);
  static_assert(int(m5::kCqeReqErr) == int(MLX5_CQE_REQ_ERR) && int(m5::kCqeInvalid) == int(MLX5_CQE_INVALID));
  // Doorbell bytes: byte1..2 = index, bytes 4..6 = QPN.
  uint64_t v = m5::doorbell_value(0x1234, 0xabcdef);
  uint8_t b[8];
  memcpy(b, &v, 8);
  CHECK(b[0] == 0 && b[1] == 0x12 && b[2] == 0x34 && b[3] == 0);
  CHECK(b[4] == 0xab && b[5] == 0xcd && b[6] == 0xef && b[7] == 0);
  m5::Doorbell d = m5::decode_doorbell(v);
  CHECK(d.pi == 0x1234 && d.qpn == 0xabcdef);
  // PRM bit fields: qpc.st is byte 25 of create_qp_in; log_sq_size dw8 [14:11].
  uint8_t cmd[prm::kCreateQpInSize] = {};
  prm::set(cmd, prm::qp::st, 0x5);
  CHECK(cmd[25] == 0x05);
  prm::set(cmd, prm::qp::log_sq_size, 0xa);
  CHECK(cmd[34] == 0x50 && cmd[35] == 0x00);
  CHECK(prm::get(cmd, prm::qp::log_sq_size) == 0xa);
  prm::set(cmd, prm::qp::dbr_umem_valid, 1);
  CHECK(cmd[232] == 0x10);
  prm::set64(cmd, prm::qp::wq_umem_offset, 0x0102030405060708ull);
  CHECK(cmd[256] == 0x01 && cmd[263] == 0x08);
  CHECK(prm::get64(cmd, prm::qp::wq_umem_offset) == 0x0102030405060708ull);
  prm::set(cmd, prm::kInOpcode, prm::kCreateQp);
  CHECK(cmd[0] == 0x05 && cmd[1] == 0x00);
  // CQE tail word as one little-endian load.
  m5::Cqe cqe;
  m5::make_cqe(&cqe, m5::kCqeReqErr, 0xbeef, 0x123456, 8, m5::kOpRdmaWrite, 0x13, 1);
  uint32_t tail;
  memcpy(&tail, cqe.bytes + 60, 4);
  m5::CqeTail t = m5::decode_cqe_tail(tail);
  CHECK(t.wqe_counter == 0xbeef && t.opcode == m5::kCqeReqErr && t.owner == 1);
  CHECK(cqe.bytes[55] == 0x13 && cqe.bytes[56] == m5::kOpRdmaWrite && cqe.bytes[57] == 0x12);
}

// With SOFTNIC_DEBUG=2 (the softnic.devx_dump test), SIGUSR2 makes softnic write a state dump
// naming every devx QP, and every thread's backtrace, to stderr.
static void check_dump_on_signal(const Endpoint& e) {
  fflush(stderr);
  char path[] = "/tmp/devx-dump-XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  int saved = dup(STDERR_FILENO);
  dup2(fd, STDERR_FILENO);
  raise(SIGUSR2);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the other threads' backtraces
  fflush(stderr);
  dup2(saved, STDERR_FILENO);
  close(saved);
  std::string text;
  char buf[4096];
  ssize_t n;
  lseek(fd, 0, SEEK_SET);
  while ((n = read(fd, buf, sizeof buf)) > 0) text.append(buf, size_t(n));
  close(fd);
  unlink(path);
  char qp[32];
  snprintf(qp, sizeof qp, "qp 0x%x: state ", e.qpn);
  size_t backtraces = 0;
  for (size_t at = 0; (at = text.find("backtrace", at)) != std::string::npos; ++at) backtraces++;
  CHECK(text.find("state dump (SIGUSR2)") != std::string::npos);
  CHECK(text.find(qp) != std::string::npos);
  CHECK(text.find("transport qp") != std::string::npos);
  CHECK(backtraces >= 3);  // this thread, the devx engine, softnic's verbs engine
  printf("state dump on SIGUSR2: %zu bytes, %zu thread backtraces, names %s\n", text.size(), backtraces, qp);
}

int main() {
  check_layouts();
  ibv_device** list = nullptr;
  ibv_pd* pd = open_host_device(&list);

  // QUERY_HCA_CAP: general and atomic subsets.
  {
    uint8_t in[prm::kQueryHcaCapInSize] = {};
    std::vector<uint8_t> out(prm::kQueryHcaCapOutSize);
    prm::set(in, prm::kInOpcode, prm::kQueryHcaCap);
    prm::set(in, prm::kInOpMod, (prm::kCapGeneral << 1) | 1);
    REQUIRE(mlx5dv_devx_general_cmd(g_ctx, in, sizeof in, out.data(), out.size()) == 0);
    CHECK(prm::get(out.data(), prm::cap::cqe_version) == 1);
    CHECK(prm::get(out.data(), prm::cap::rc) == 1);
    CHECK(prm::get(out.data(), prm::cap::log_max_qp_sz) >= 10);
    prm::set(in, prm::kInOpMod, (prm::kCapAtomic << 1) | 1);
    REQUIRE(mlx5dv_devx_general_cmd(g_ctx, in, sizeof in, out.data(), out.size()) == 0);
    uint32_t ops = prm::get(out.data(), prm::cap::atomic_operations);
    CHECK((ops & (prm::kAtomicOpCas | prm::kAtomicOpFa)) == (prm::kAtomicOpCas | prm::kAtomicOpFa));
    CHECK(prm::get(out.data(), prm::cap::atomic_size_qp) & prm::kAtomicSize8);
  }
  // A command naming an unknown PD fails like firmware: status, syndrome, EREMOTEIO.
  {
    uint8_t in[prm::kCreateQpInSize] = {}, out[prm::kCreateQpOutSize] = {};
    prm::set(in, prm::kInOpcode, prm::kCreateQp);
    prm::set(in, prm::qp::pd, 0xfffff);
    errno = 0;
    CHECK(mlx5dv_devx_obj_create(g_ctx, in, sizeof in, out, sizeof out) == nullptr);
    CHECK(errno == EREMOTEIO);
    CHECK(prm::get(out, prm::kOutStatus) == prm::kStatusBadParam);
  }

  Endpoint a, b;
  create_endpoint(a, /*collapsed=*/true);
  b.log_sq = 5;  // 32 WQEBBs: the ring test below wraps it
  create_endpoint(b, /*collapsed=*/false);
  CHECK(query_state(a) == prm::kQpsRst);
  for (Endpoint* e : {&a, &b}) modify(*e, prm::kRst2Init, 0);
  CHECK(query_state(a) == prm::kQpsInit);
  modify(a, prm::kInit2Rtr, b.qpn);
  modify(b, prm::kInit2Rtr, a.qpn);
  for (Endpoint* e : {&a, &b}) modify(*e, prm::kRtr2Rts, 0);
  CHECK(query_state(a) == prm::kQpsRts && query_state(b) == prm::kQpsRts);

  const size_t kMem = 1 << 16;
  auto* mem = static_cast<uint8_t*>(aligned_alloc(4096, kMem));
  memset(mem, 0, kMem);
  ibv_mr* mr = ibv_reg_mr(pd, mem, kMem,
                          IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                              IBV_ACCESS_REMOTE_ATOMIC);
  REQUIRE(mr);
  uint8_t* src = mem;             // local source / destination area
  uint8_t* dst = mem + 0x8000;    // "remote" area (same process, reached through the wire)
  uint64_t raddr = reinterpret_cast<uint64_t>(dst);

  // 1. Inline WRITE, signalled: collapsed CQE with its index; DBR left stale on purpose.
  {
    uint64_t v = 0x1122334455667788ull;
    uint16_t idx = post_write_inline(a, &v, 8, raddr, mr->rkey, true);
    ring(a, /*update_dbr=*/false);
    Seen s = wait_collapsed(a, idx);
    CHECK(s.ok && s.tail.opcode == m5::kCqeReq);
    uint64_t got;
    memcpy(&got, dst, 8);
    CHECK(got == v);
    printf("inline write: ok=%d\n", s.ok);
  }
  // 2. Unsignalled 4 KiB WRITE + signalled NOP in one doorbell: one CQE, naming the NOP.
  {
    for (int i = 0; i < 4096; ++i) src[i] = uint8_t(i * 7 + 1);
    post_rdma(a, m5::kOpRdmaWrite, reinterpret_cast<uint64_t>(src), mr->lkey, 4096, raddr + 64,
              mr->rkey, false);
    uint16_t nop = post_nop(a, true);
    ring(a);
    Seen s = wait_collapsed(a, nop);
    CHECK(s.ok && s.tail.opcode == m5::kCqeReq);
    CHECK(memcmp(src, dst + 64, 4096) == 0);
    printf("write + nop: ok=%d\n", s.ok);
  }
  // 3. READ.
  {
    for (int i = 0; i < 256; ++i) dst[0x2000 + i] = uint8_t(255 - i);
    uint16_t idx = post_rdma(a, m5::kOpRdmaRead, reinterpret_cast<uint64_t>(src + 0x1000), mr->lkey,
                             256, raddr + 0x2000, mr->rkey, true);
    ring(a);
    Seen s = wait_collapsed(a, idx);
    CHECK(s.ok && memcmp(src + 0x1000, dst + 0x2000, 256) == 0);
    printf("read: ok=%d\n", s.ok);
  }
  // 4. FETCH_ADD sequence: exact previous values; 5. CAS hit and miss.
  {
    uint64_t* counter = reinterpret_cast<uint64_t*>(dst + 0x3000);
    uint64_t* result = reinterpret_cast<uint64_t*>(src + 0x3000);
    *counter = 0;
    bool exact = true;
    for (uint64_t i = 0; i < 50; ++i) {
      uint16_t idx = post_atomic(a, m5::kOpAtomicFa, 1, 0, reinterpret_cast<uint64_t>(result), mr->lkey,
                                 raddr + 0x3000, mr->rkey);
      ring(a);
      Seen s = wait_collapsed(a, idx);
      exact &= s.ok && *result == i;
    }
    CHECK(exact && *counter == 50);
    uint16_t idx = post_atomic(a, m5::kOpAtomicCs, 777, 50, reinterpret_cast<uint64_t>(result), mr->lkey,
                               raddr + 0x3000, mr->rkey);
    ring(a);
    CHECK(wait_collapsed(a, idx).ok && *result == 50 && *counter == 777);
    idx = post_atomic(a, m5::kOpAtomicCs, 1, 50, reinterpret_cast<uint64_t>(result), mr->lkey,
                      raddr + 0x3000, mr->rkey);
    ring(a);
    CHECK(wait_collapsed(a, idx).ok && *result == 777 && *counter == 777);
    printf("atomics: fetch-add exact=%d\n", exact);
  }
  // 6. Ring CQ on b: 100 signalled WRITEs in batches of 5 (SQ of 32 and CQ of 16 wrap several
  //    times); owner parity and wqe_counter checked for every CQE.
  {
    bool good = true;
    uint16_t expect = 0;
    for (int batch = 0; batch < 20; ++batch) {
      for (int k = 0; k < 5; ++k) {
        uint64_t v = uint64_t(batch * 5 + k) << 8 | 0xab;
        post_write_inline(b, &v, 8, reinterpret_cast<uint64_t>(src + 0x4000 + 8 * (batch * 5 + k)),
                          mr->rkey, true);
      }
      ring(b);
      for (int k = 0; k < 5; ++k) {
        Seen s = wait_ring(b);
        good &= s.ok && s.tail.opcode == m5::kCqeReq && s.tail.wqe_counter == expect;
        expect++;
      }
    }
    for (int i = 0; i < 100; ++i) {
      uint64_t v;
      memcpy(&v, src + 0x4000 + 8 * i, 8);
      good &= v == (uint64_t(i) << 8 | 0xab);
    }
    CHECK(good);
    printf("ring CQ with wrap: ok=%d\n", good);
  }
  // 6b. A 3-WQEBB inline WRITE (100 bytes) that wraps around the end of b's SQ, after 26
  //     unsignalled NOPs; then an 8-byte masked FA (opmod 0x09, boundary 0) = fetch-add.
  {
    for (int k = 0; k < 26; ++k) post_nop(b, false);
    CHECK((b.prod & 31) == 30);
    uint8_t payload[100];
    for (int i = 0; i < 100; ++i) payload[i] = uint8_t(0x40 + i);
    uint16_t idx = post_write_inline(b, payload, 100, reinterpret_cast<uint64_t>(src + 0x6000), mr->rkey, true);
    ring(b);
    Seen s = wait_ring(b);
    CHECK(s.ok && s.tail.opcode == m5::kCqeReq && s.tail.wqe_counter == idx);
    CHECK(memcmp(src + 0x6000, payload, 100) == 0);
    uint64_t* counter = reinterpret_cast<uint64_t*>(dst + 0x7000);
    uint64_t* result = reinterpret_cast<uint64_t*>(src + 0x7000);
    *counter = 40;
    uint16_t fa = uint16_t(b.prod);
    uint8_t* w = wqe_at(b, b.prod);
    post_atomic(b, m5::kOpAtomicMaskedFa, 2, 0, reinterpret_cast<uint64_t>(result), mr->lkey,
                raddr + 0x7000, mr->rkey);
    m5::CtrlSeg c;
    memcpy(&c, w, 16);
    c.opmod_idx_opcode = m5::ctrl_opmod_idx_opcode(m5::kOpmodExtAtomic8B, fa, m5::kOpAtomicMaskedFa);
    memcpy(w, &c, 16);
    ring(b);
    s = wait_ring(b);
    CHECK(s.ok && s.tail.opcode == m5::kCqeReq && s.tail.wqe_counter == fa && *result == 40 && *counter == 42);
    printf("wrapping 3-WQEBB inline write and masked FA: ok=%d\n", s.ok);
  }
  // 7. Error: WRITE with a bad rkey -> error CQE (REMOTE_ACCESS_ERR); the next WQE is flushed.
  {
    uint16_t bad = post_rdma(a, m5::kOpRdmaWrite, reinterpret_cast<uint64_t>(src), mr->lkey, 8, raddr,
                             mr->rkey ^ 0x5500, true);
    ring(a);
    Seen s = wait_collapsed(a, bad);
    CHECK(s.ok && s.tail.opcode == m5::kCqeReqErr && s.syndrome == m5::kSyndRemoteAccessErr);
    CHECK(a.cqbuf()[56] == m5::kOpRdmaWrite);
    uint16_t nop = post_nop(a, true);
    ring(a);
    Seen f = wait_collapsed(a, nop);
    CHECK(f.ok && f.tail.opcode == m5::kCqeReqErr && f.syndrome == m5::kSyndWrFlushErr);
    printf("error CQE syndrome 0x%x, then flush 0x%x\n", s.syndrome, f.syndrome);
  }
  // 8. An unsupported opcode is rejected with LOCAL_QP_OP_ERR (on b, still healthy).
  {
    uint16_t idx = uint16_t(b.prod);
    uint8_t* w = wqe_at(b, b.prod);
    memset(w, 0, 64);
    m5::CtrlSeg c{};
    c.opmod_idx_opcode = m5::ctrl_opmod_idx_opcode(0, idx, 0x2a);
    c.qpn_ds = m5::ctrl_qpn_ds(b.qpn, 1);
    c.fm_ce_se = 0;  // errors complete even without CQ_UPDATE
    memcpy(w, &c, 16);
    b.prod++;
    ring(b);
    Seen s = wait_ring(b);
    CHECK(s.ok && s.tail.opcode == m5::kCqeReqErr && s.syndrome == m5::kSyndLocalQpOpErr &&
          s.tail.wqe_counter == idx);
  }

  // 9. gda's own device-side code (gda/device.cuh compiled for the host) on two "PEs" in two CPU
  //    threads: put8 + quiet, get, fetch_add, barrier and a ping-pong, over collapsed CQs.
  Endpoint c, d;
  create_endpoint(c, true);
  create_endpoint(d, true);
  for (Endpoint* e : {&c, &d}) modify(*e, prm::kRst2Init, 0);
  modify(c, prm::kInit2Rtr, d.qpn);
  modify(d, prm::kInit2Rtr, c.qpn);
  for (Endpoint* e : {&c, &d}) modify(*e, prm::kRtr2Rts, 0);
  {
    const size_t kHeap = 1 << 16;
    uint8_t* heap[2];
    ibv_mr* hmr[2];
    for (int i = 0; i < 2; ++i) {
      heap[i] = static_cast<uint8_t*>(aligned_alloc(4096, kHeap));
      memset(heap[i], 0, kHeap);
      hmr[i] = ibv_reg_mr(pd, heap[i], kHeap,
                          IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                              IBV_ACCESS_REMOTE_ATOMIC);
      REQUIRE(hmr[i]);
    }
    gda::DeviceState st[2]{};
    Endpoint* eps[2] = {&c, &d};
    for (int i = 0; i < 2; ++i) {
      int peer = 1 - i;
      st[i].pe = i;
      st[i].npes = 2;
      st[i].heap = heap[i];
      st[i].heap_bytes = kHeap;
      st[i].lkey = hmr[i]->lkey;
      st[i].remote_heap[peer] = reinterpret_cast<uint64_t>(heap[peer]);
      st[i].rkey[peer] = hmr[peer]->rkey;
      st[i].timeout_ns = 10000000000ull;
      gda::QpDev& q = st[i].qp[peer];
      q.sq = eps[i]->sq();
      q.nwqes = 1u << eps[i]->log_sq;
      q.qpn = eps[i]->qpn;
      q.dbrec = eps[i]->dbr() + m5::kDbrSendIndex;
      q.bf = static_cast<uint64_t*>(eps[i]->uar->reg_addr);
      q.cqe = eps[i]->cqbuf();
    }
    namespace dev = gda::dev;
    const uint64_t kData = gda::kHeapReserved;
    // put8 + quiet, 200 times (the 64-WQEBB SQ wraps), then get each value back.
    bool ok = true;
    for (uint64_t i = 0; i < 200; ++i) ok &= dev::put8(&st[0], 1, kData + 8 * (i % 32), i * 3 + 1) && dev::quiet(&st[0], 1);
    for (uint64_t j = 0; j < 32; ++j) {
      ok &= dev::get(&st[0], 1, kData + 1024, kData + 8 * j, 8);
      uint64_t v;
      memcpy(&v, heap[0] + kData + 1024, 8);
      uint64_t last = j + ((199 - j) / 32) * 32;
      ok &= v == last * 3 + 1;
    }
    CHECK(ok);
    // fetch_add: exact sequence.
    bool exact = true;
    for (uint64_t i = 0; i < 100; ++i) {
      uint64_t old = ~0ull;
      exact &= dev::fetch_add(&st[0], 1, kData + 2048, 5, &old) && old == 5 * i;
    }
    CHECK(exact && st[0].qp[1].error == 0);
    // Barrier + ping-pong between two threads.
    bool r0 = true, r1 = true;
    std::thread t1([&] {
      r1 &= dev::barrier(&st[1]);
      for (uint64_t i = 1; i <= 300; ++i) r1 &= dev::wait_eq(&st[1], kData + 4096, i) && dev::put8(&st[1], 0, kData + 4096, i);
      r1 &= dev::quiet(&st[1], 0) && dev::barrier(&st[1]);
    });
    r0 &= dev::barrier(&st[0]);
    for (uint64_t i = 1; i <= 300; ++i) r0 &= dev::put8(&st[0], 1, kData + 4096, i) && dev::wait_eq(&st[0], kData + 4096, i);
    r0 &= dev::quiet(&st[0], 1) && dev::barrier(&st[0]);
    t1.join();
    CHECK(r0 && r1);
    printf("gda device code on CPU: put/get %d, fetch-add exact %d, barrier + ping-pong %d/%d\n", ok, exact, r0, r1);
    for (int i = 0; i < 2; ++i) {
      ibv_dereg_mr(hmr[i]);
      free(heap[i]);
    }
  }

  if (const char* dbg = getenv("SOFTNIC_DEBUG"); dbg && (atoi(dbg) & 2)) check_dump_on_signal(a);

  for (Endpoint* e : {&a, &b, &c, &d}) {
    CHECK(mlx5dv_devx_obj_destroy(e->qp) == 0);
    CHECK(mlx5dv_devx_obj_destroy(e->cq) == 0);
    mlx5dv_devx_free_uar(e->uar);
    mlx5dv_devx_free_uar(e->cq_uar);
    CHECK(mlx5dv_devx_umem_dereg(e->umem) == 0);
    free(e->buf);
  }
  ibv_dereg_mr(mr);
  ibv_dealloc_pd(pd);
  ibv_close_device(g_ctx);
  ibv_free_device_list(list);
  free(mem);
  if (g_failures) {
    printf("devx host test: %d check(s) failed\n", g_failures);
    return 1;
  }
  printf("devx host test: all checks passed\n");
  return 0;
}

// Two-process checks of softnic behaviour that perftest does not exercise: data integrity of
// multi-SGE writes, reads and atomics, WRITE_WITH_IMM into zero-SGE receives, inline and
// unsignaled sends, the ibv_wr_* path, and errors as a NIC reports them (remote access
// errors, RNR retry exhaustion, flushes, posting to a QP that is not ready, invalid
// transitions, a peer that dies). Runs against whatever libibverbs.so.1 is loaded.
//
// Each test runs side A in the test process and side B in a process of its own (this program,
// started again), joined by a socket pair for address exchange and barriers. A side runs with
// --gtest_throw_on_failure, so its first failed expectation ends it (run_side catches it): a side
// that carried on would wait for completions or barrier messages that never come. Its socket
// closes as it ends, which ends the other side too.
#include <gtest/gtest.h>
#include <infiniband/verbs.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "scenario_side.h"

namespace {

using namespace softnic_scenarios;

pid_t g_peer = -1;  // side B, in side A's process

void fill(uint8_t* p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; ++i) p[i] = uint8_t(seed * 131 + i * 7 + (i >> 8));
}

// A writes three SGEs to B, reads them back into another place, does atomics; B checks.
void scenario_data(Side& s, bool a, bool ex) {
  s.make_qp(ex);
  // B's atomic target is set before the address exchange, which A waits for before its atomics.
  if (!a) *reinterpret_cast<uint64_t*>(s.buf + 524288) = 40;
  Wire peer = s.connect();
  if (a) {
    fill(s.buf, 3000, 1);
    fill(s.buf + 8192, 70000, 2);
    fill(s.buf + 100000, 5, 3);
    if (!ex) {
      EXPECT_EQ(s.post(IBV_WR_RDMA_WRITE, 1, {s.sge(0, 3000), s.sge(8192, 70000), s.sge(100000, 5)}, peer.addr + 4096, peer.rkey), 0);
    } else {
      ibv_qp_ex* qx = ibv_qp_to_qp_ex(s.qp);
      ibv_sge l[3] = {s.sge(0, 3000), s.sge(8192, 70000), s.sge(100000, 5)};
      ibv_wr_start(qx);
      qx->wr_id = 1;
      qx->wr_flags = IBV_SEND_SIGNALED;
      ibv_wr_rdma_write(qx, peer.rkey, peer.addr + 4096);
      ibv_wr_set_sge_list(qx, 3, l);
      EXPECT_EQ(ibv_wr_complete(qx), 0);
    }
    ibv_wc wc = s.wait_wc();
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
    EXPECT_EQ(wc.wr_id, 1u);
    EXPECT_EQ(wc.opcode, IBV_WC_RDMA_WRITE);
    // Read back into a single SGE at offset 300000 and compare with what was written.
    EXPECT_EQ(s.post(IBV_WR_RDMA_READ, 2, {s.sge(300000, 73005)}, peer.addr + 4096, peer.rkey), 0);
    wc = s.wait_wc();
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.wr_id, 2u);
    EXPECT_EQ(wc.opcode, IBV_WC_RDMA_READ);
    EXPECT_EQ(wc.byte_len, 73005u);
    EXPECT_EQ(memcmp(s.buf + 300000, s.buf, 3000), 0);
    EXPECT_EQ(memcmp(s.buf + 303000, s.buf + 8192, 70000), 0);
    EXPECT_EQ(memcmp(s.buf + 373000, s.buf + 100000, 5), 0);
    // Atomics on B's counter at offset 512 KiB, initialised by B to 40.
    uint64_t* res = reinterpret_cast<uint64_t*>(s.buf + 600000);
    EXPECT_EQ(s.post_atomic(IBV_WR_ATOMIC_FETCH_AND_ADD, 3, s.sge(600000, 8), peer.addr + 524288, peer.rkey, 2, 0), 0);
    wc = s.wait_wc();
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.opcode, IBV_WC_FETCH_ADD);
    EXPECT_EQ(*res, 40u);
    EXPECT_EQ(s.post_atomic(IBV_WR_ATOMIC_CMP_AND_SWP, 4, s.sge(600000, 8), peer.addr + 524288, peer.rkey, 42, 7), 0);
    wc = s.wait_wc();
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.opcode, IBV_WC_COMP_SWAP);
    EXPECT_EQ(*res, 42u);
    EXPECT_EQ(s.post_atomic(IBV_WR_ATOMIC_CMP_AND_SWP, 5, s.sge(600000, 8), peer.addr + 524288, peer.rkey, 42, 9), 0);
    wc = s.wait_wc();
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
    EXPECT_EQ(*res, 7u);  // compare failed: value unchanged
    barrier();
  } else {
    barrier();
    std::vector<uint8_t> expect(73005);
    fill(expect.data(), 3000, 1);
    fill(expect.data() + 3000, 70000, 2);
    fill(expect.data() + 73000, 5, 3);
    EXPECT_EQ(memcmp(s.buf + 4096, expect.data(), expect.size()), 0);
    EXPECT_EQ(*reinterpret_cast<uint64_t*>(s.buf + 524288), 7u);
  }
  barrier();
  s.destroy_qp();
}

// WRITE_WITH_IMM consumes a zero-SGE receive; SEND_WITH_IMM and inline, unsignaled sends.
void scenario_imm_inline(Side& s, bool a) {
  s.make_qp(false);
  s.to_init();  // receives may be posted from INIT on
  if (!a) {
    s.post_recv(100, {});                        // zero SGEs: for the WRITE_WITH_IMM
    s.post_recv(101, {s.sge(65536, 4096)});      // for the SEND_WITH_IMM
    for (int i = 0; i < 8; ++i) s.post_recv(200 + i, {s.sge(131072 + i * 64, 64)});
  }
  Wire peer = s.connect();
  barrier();  // receives are posted before anything is sent
  if (a) {
    fill(s.buf, 1000, 9);
    EXPECT_EQ(s.post(IBV_WR_RDMA_WRITE_WITH_IMM, 10, {s.sge(0, 1000)}, peer.addr + 2048, peer.rkey, IBV_SEND_SIGNALED, 0xabcd), 0);
    ibv_wc wc = s.wait_wc();
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.opcode, IBV_WC_RDMA_WRITE);
    EXPECT_EQ(s.post(IBV_WR_SEND_WITH_IMM, 11, {s.sge(0, 777)}, 0, 0, IBV_SEND_SIGNALED, 0x1234), 0);
    wc = s.wait_wc();
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.opcode, IBV_WC_SEND);
    EXPECT_EQ(wc.wr_id, 11u);
    // Eight inline sends, only the last one signaled: exactly one completion.
    for (int i = 0; i < 8; ++i) {
      s.buf[4000] = uint8_t(i);
      EXPECT_EQ(s.post(IBV_WR_SEND, 20 + i, {s.sge(4000, 33)}, 0, 0, IBV_SEND_INLINE | (i == 7 ? IBV_SEND_SIGNALED : 0)), 0);
    }
    wc = s.wait_wc();
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.wr_id, 27u);
    ibv_wc extra;
    usleep(20000);
    EXPECT_EQ(ibv_poll_cq(s.cq, 1, &extra), 0);
  } else {
    ibv_wc wc = s.wait_wc();
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.wr_id, 100u);
    EXPECT_EQ(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
    EXPECT_NE(wc.wc_flags & IBV_WC_WITH_IMM, 0u);
    EXPECT_EQ(be32toh(wc.imm_data), 0xabcd);
    EXPECT_EQ(wc.byte_len, 1000u);
    std::vector<uint8_t> expect(1000);
    fill(expect.data(), 1000, 9);
    EXPECT_EQ(memcmp(s.buf + 2048, expect.data(), 1000), 0);
    wc = s.wait_wc();
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.wr_id, 101u);
    EXPECT_EQ(wc.opcode, IBV_WC_RECV);
    EXPECT_EQ(wc.byte_len, 777u);
    EXPECT_NE(wc.wc_flags & IBV_WC_WITH_IMM, 0u);
    EXPECT_EQ(be32toh(wc.imm_data), 0x1234);
    EXPECT_EQ(wc.src_qp, peer.qpn);
    for (int i = 0; i < 8; ++i) {
      wc = s.wait_wc();
      EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
      EXPECT_EQ(wc.wr_id, uint64_t(200 + i));
      EXPECT_EQ(wc.byte_len, 33u);
      // Inline data was captured at post time, so each message carries its own byte.
      EXPECT_EQ(s.buf[131072 + i * 64], uint8_t(i));
    }
  }
  barrier();
  s.destroy_qp();
}

// Bad rkey and out-of-bounds access: REM_ACCESS_ERR at the requester, QP to ERR, flushes.
void scenario_remote_access(Side& s, bool a) {
  for (int round = 0; round < 3; ++round) {
    s.make_qp(false);
    Wire peer = s.connect();
    if (a && round == 2) {
      // A bad local key is the requester's own protection error.
      ibv_sge bad = s.sge(0, 64);
      bad.lkey += 1;
      EXPECT_EQ(s.post(IBV_WR_RDMA_WRITE, 4, {bad}, peer.addr, peer.rkey), 0);
      ibv_wc wc = s.wait_wc();
      EXPECT_EQ(wc.wr_id, 4u);
      EXPECT_EQ(wc.status, IBV_WC_LOC_PROT_ERR);
      EXPECT_EQ(s.state(), IBV_QPS_ERR);
    } else if (a) {
      uint64_t addr = round == 0 ? peer.addr : peer.addr + kBuf - 16;
      uint32_t rkey = round == 0 ? peer.rkey + 1 : peer.rkey;
      EXPECT_EQ(s.post(IBV_WR_RDMA_WRITE, 1, {s.sge(0, 64)}, addr, rkey), 0);
      EXPECT_EQ(s.post(IBV_WR_RDMA_WRITE, 2, {s.sge(0, 8)}, peer.addr, peer.rkey), 0);
      ibv_wc wc = s.wait_wc();
      EXPECT_EQ(wc.wr_id, 1u);
      EXPECT_EQ(wc.status, IBV_WC_REM_ACCESS_ERR);
      wc = s.wait_wc();
      EXPECT_EQ(wc.wr_id, 2u);
      EXPECT_EQ(wc.status, IBV_WC_WR_FLUSH_ERR);
      EXPECT_EQ(s.state(), IBV_QPS_ERR);
      // Posting to a QP in ERR is accepted and flushed.
      EXPECT_EQ(s.post(IBV_WR_SEND, 3, {s.sge(0, 8)}, 0, 0), 0);
      wc = s.wait_wc();
      EXPECT_EQ(wc.wr_id, 3u);
      EXPECT_EQ(wc.status, IBV_WC_WR_FLUSH_ERR);
    }
    barrier();
    s.destroy_qp();
  }
}

// A SEND without a posted receive is retried (RNR) and fails once rnr_retry is used up;
// with retries left it succeeds as soon as the receive shows up.
void scenario_rnr(Side& s, bool a) {
  s.make_qp(false);
  Wire peer = s.connect(/*rnr_retry=*/2, /*min_rnr_timer=*/1);
  if (a) {
    auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(s.post(IBV_WR_SEND, 1, {s.sge(0, 16)}, 0, 0), 0);
    ibv_wc wc = s.wait_wc();
    EXPECT_EQ(wc.wr_id, 1u);
    EXPECT_EQ(wc.status, IBV_WC_RNR_RETRY_EXC_ERR);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  }
  barrier();
  s.destroy_qp();
  s.make_qp(false);
  peer = s.connect(/*rnr_retry=*/7, /*min_rnr_timer=*/14);
  if (a) {
    EXPECT_EQ(s.post(IBV_WR_SEND, 2, {s.sge(0, 16)}, 0, 0), 0);
    barrier();
    ibv_wc wc = s.wait_wc();
    EXPECT_EQ(wc.wr_id, 2u);
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  } else {
    barrier();
    usleep(5000);  // the send is already being NAKed with RNR
    s.post_recv(5, {s.sge(0, 64)});
    ibv_wc wc = s.wait_wc();
    EXPECT_EQ(wc.wr_id, 5u);
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.byte_len, 16u);
  }
  barrier();
  s.destroy_qp();
}

// Local checks: transitions, not-ready posting, flushing receives on ERR.
void scenario_state_machine(Side& s) {
  s.make_qp(true);
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTS;
  EXPECT_EQ(ibv_modify_qp(s.qp, &a, IBV_QP_STATE), EINVAL);  // RESET -> RTS
  a.qp_state = IBV_QPS_INIT;
  EXPECT_EQ(ibv_modify_qp(s.qp, &a, IBV_QP_STATE), EINVAL);  // INIT needs port, pkey, access
  EXPECT_EQ(s.post(IBV_WR_SEND, 1, {s.sge(0, 8)}, 0, 0), EINVAL);  // RESET: not ready
  ibv_recv_wr rwr{}, *rbad;
  EXPECT_EQ(ibv_post_recv(s.qp, &rwr, &rbad), EINVAL);  // RESET: no receives either
  s.to_init();
  EXPECT_EQ(s.post(IBV_WR_SEND, 1, {s.sge(0, 8)}, 0, 0), EINVAL);  // INIT: still not ready
  ibv_qp_ex* qx = ibv_qp_to_qp_ex(s.qp);
  ibv_wr_start(qx);
  ibv_wr_send(qx);
  ibv_wr_set_sge(qx, s.mr->lkey, reinterpret_cast<uint64_t>(s.buf), 8);
  EXPECT_EQ(ibv_wr_complete(qx), EINVAL);
  a = {};
  a.qp_state = IBV_QPS_RTR;
  EXPECT_EQ(ibv_modify_qp(s.qp, &a, IBV_QP_STATE), EINVAL);  // RTR needs AV, MTU, QPN, PSN...
  s.post_recv(7, {s.sge(0, 8)});
  s.post_recv(8, {s.sge(8, 8)});
  a.qp_state = IBV_QPS_ERR;
  EXPECT_EQ(ibv_modify_qp(s.qp, &a, IBV_QP_STATE), 0);
  ibv_wc wc = s.wait_wc();
  EXPECT_EQ(wc.wr_id, 7u);
  EXPECT_EQ(wc.status, IBV_WC_WR_FLUSH_ERR);
  wc = s.wait_wc();
  EXPECT_EQ(wc.wr_id, 8u);
  EXPECT_EQ(wc.status, IBV_WC_WR_FLUSH_ERR);
  a.qp_state = IBV_QPS_RESET;
  EXPECT_EQ(ibv_modify_qp(s.qp, &a, IBV_QP_STATE), 0);
  EXPECT_EQ(s.state(), IBV_QPS_RESET);
  EXPECT_EQ(ibv_dealloc_pd(s.pd), EBUSY);  // still has a QP and an MR
  s.destroy_qp();
  errno = 0;
  ibv_mr* dmabuf = ibv_reg_dmabuf_mr(s.pd, 0, 4096, 0, 3, IBV_ACCESS_LOCAL_WRITE);
  const int dmabuf_errno = errno;
  EXPECT_EQ(dmabuf, nullptr);
  EXPECT_EQ(dmabuf_errno, EOPNOTSUPP);
}

// An SRQ armed with a limit raises IBV_EVENT_SRQ_LIMIT_REACHED through the blocking
// ibv_get_async_event once receives drain below it.
void scenario_srq_limit_event(Side& s, bool a) {
  ibv_srq* srq = nullptr;
  if (!a) {
    ibv_srq_init_attr sa{};
    sa.attr.max_wr = 16;
    sa.attr.max_sge = 1;
    srq = ibv_create_srq(s.pd, &sa);
    EXPECT_NE(srq, nullptr);
    for (int i = 0; i < 4; ++i) {
      ibv_sge g = s.sge(size_t(i) * 256, 256);
      ibv_recv_wr wr{}, *bad;
      wr.wr_id = 50 + i;
      wr.sg_list = &g;
      wr.num_sge = 1;
      EXPECT_EQ(ibv_post_srq_recv(srq, &wr, &bad), 0);
    }
    ibv_srq_attr la{};
    la.srq_limit = 2;
    EXPECT_EQ(ibv_modify_srq(srq, &la, IBV_SRQ_LIMIT), 0);
    ibv_qp_init_attr qa{};
    qa.send_cq = qa.recv_cq = s.cq;
    qa.srq = srq;
    qa.cap.max_send_wr = 8;
    qa.cap.max_send_sge = 1;
    qa.qp_type = IBV_QPT_RC;
    s.qp = ibv_create_qp(s.pd, &qa);
    EXPECT_NE(s.qp, nullptr);
    EXPECT_EQ(ibv_destroy_srq(srq), EBUSY);  // a QP still uses it
  } else {
    s.make_qp(false);
  }
  s.connect();
  if (a) {
    for (int i = 0; i < 3; ++i) EXPECT_EQ(s.post(IBV_WR_SEND, 60 + i, {s.sge(0, 100)}, 0, 0), 0);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(s.wait_wc().status, IBV_WC_SUCCESS);
  } else {
    for (int i = 0; i < 3; ++i) {
      ibv_wc wc = s.wait_wc();
      EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
      EXPECT_EQ(wc.wr_id, uint64_t(50 + i));
      EXPECT_EQ(wc.byte_len, 100u);
    }
    ibv_async_event ev;
    EXPECT_EQ(ibv_get_async_event(s.ctx, &ev), 0);
    EXPECT_EQ(ev.event_type, IBV_EVENT_SRQ_LIMIT_REACHED);
    EXPECT_EQ(ev.element.srq, srq);
    ibv_ack_async_event(&ev);
    ibv_srq_attr qa{};
    EXPECT_EQ(ibv_query_srq(srq, &qa), 0);
    EXPECT_EQ(qa.srq_limit, 0u);  // the limit is one-shot
  }
  barrier();
  s.destroy_qp();
  if (srq) {
    EXPECT_EQ(ibv_destroy_srq(srq), 0);
  }
}

// B dies without cleaning up; A's next SEND completes with RETRY_EXC_ERR.
void scenario_dead_peer(Side& s, bool a) {
  s.make_qp(false);
  s.to_init();
  s.post_recv(1, {s.sge(0, 64)});
  s.connect();
  barrier();
  if (!a) _exit(0);  // no destructors, no atexit: looks like a crash to the fabric
  // Reaped before the send: softnic takes a zombie for a live peer.
  int status = 0;
  EXPECT_EQ(waitpid(g_peer, &status, 0), g_peer);
  g_peer = -1;
  EXPECT_EQ(s.post(IBV_WR_SEND, 9, {s.sge(0, 16)}, 0, 0), 0);
  ibv_wc wc = s.wait_wc(15000);
  EXPECT_EQ(wc.wr_id, 9u);
  EXPECT_EQ(wc.status, IBV_WC_RETRY_EXC_ERR);
  s.destroy_qp();
}

void state_machine(Side& s, bool a) {
  if (a) scenario_state_machine(s);
  barrier();
}

using Scenario = void (*)(Side&, bool a);
struct NamedScenario {
  const char* name;
  Scenario run;
};
const NamedScenario kScenarios[] = {
    {"data-post-send", [](Side& s, bool a) { scenario_data(s, a, /*ex=*/false); }},
    {"data-wr-api", [](Side& s, bool a) { scenario_data(s, a, /*ex=*/true); }},
    {"imm-inline", scenario_imm_inline},
    {"remote-access", scenario_remote_access},
    {"rnr", scenario_rnr},
    {"srq-limit", scenario_srq_limit_event},
    {"state-machine", state_machine},
    {"dead-peer", scenario_dead_peer},
};
const NamedScenario* find_scenario(const char* name) {
  for (const NamedScenario& n : kScenarios)
    if (strcmp(n.name, name) == 0) return &n;
  return nullptr;
}

// One side of a scenario in this process: opens the device, runs, closes. False when an
// expectation failed (gtest has printed it); the first failure ends the side.
bool run_side(Scenario scenario, bool a) {
  GTEST_FLAG_SET(throw_on_failure, true);
  bool ok = true;
  try {
    srand48(getpid());
    Side s;
    s.open();
    scenario(s, a);
    s.close();
  } catch (const std::exception&) {
    ok = false;
  }
  GTEST_FLAG_SET(throw_on_failure, false);
  return ok && !::testing::Test::HasFailure();
}

// Runs `name` with side A in this process and side B in a new process: this program again, run
// with --side-b (a fresh image: nothing of this process's verbs state is inherited) and without
// the profiler preloaded, since B is the test's helper and not the program measured.
void run_with_peer(const char* name) {
  const NamedScenario* sc = find_scenario(name);
  ASSERT_NE(sc, nullptr) << name;
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  fcntl(sv[0], F_SETFD, FD_CLOEXEC);
  const std::string side_b = std::string("--side-b=") + name, fd = "--socket-fd=" + std::to_string(sv[1]);
  char* argv[] = {const_cast<char*>("/proc/self/exe"), const_cast<char*>(side_b.c_str()), const_cast<char*>(fd.c_str()),
                  nullptr};
  std::vector<char*> env;
  for (char** e = environ; *e; ++e)
    if (strncmp(*e, "LD_PRELOAD=", 11) != 0) env.push_back(*e);
  env.push_back(nullptr);
  fflush(nullptr);
  ASSERT_EQ(posix_spawn(&g_peer, "/proc/self/exe", nullptr, nullptr, argv, env.data()), 0);
  close(sv[1]);  // so that A sees EOF once B is gone
  g_sock = sv[0];
  const bool a_ok = run_side(sc->run, /*a=*/true);
  close(g_sock);  // ends B too if A failed half way
  EXPECT_TRUE(a_ok) << "side A failed (printed above)";
  if (g_peer > 0) {
    int status = 0;
    ASSERT_EQ(waitpid(g_peer, &status, 0), g_peer);
    g_peer = -1;
    const bool b_ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    EXPECT_TRUE(b_ok) << "side B ended with wait status " << status << " (its failures are printed above)";
  }
}

}  // namespace

TEST(SoftnicVerbs, MultiSgeWritesReadsAndAtomicsMoveTheRightBytesThroughPostSend) { run_with_peer("data-post-send"); }
TEST(SoftnicVerbs, MultiSgeWritesReadsAndAtomicsMoveTheRightBytesThroughTheWrApi) { run_with_peer("data-wr-api"); }
TEST(SoftnicVerbs, WriteWithImmSendWithImmInlineAndUnsignaledSendsCompleteAsOnANic) { run_with_peer("imm-inline"); }
TEST(SoftnicVerbs, RemoteAccessErrorsMoveTheQpToErrorAndFlushWhatFollows) { run_with_peer("remote-access"); }
TEST(SoftnicVerbs, RnrRetriesRunOutWithoutAReceiveAndSucceedOnceOneIsPosted) { run_with_peer("rnr"); }
TEST(SoftnicVerbs, AnSrqBelowItsLimitRaisesTheAsyncEventOnce) { run_with_peer("srq-limit"); }
TEST(SoftnicVerbs, InvalidTransitionsAndPostsToAQpNotReadyAreRefused) { run_with_peer("state-machine"); }
TEST(SoftnicVerbs, APeerThatDiesEndsTheSurvivorsSendWithRetryExceeded) { run_with_peer("dead-peer"); }

int main(int argc, char** argv) {
  // Side B of one scenario (run_with_peer): --side-b=NAME --socket-fd=N.
  if (argc == 3 && strncmp(argv[1], "--side-b=", 9) == 0 && strncmp(argv[2], "--socket-fd=", 12) == 0) {
    g_sock = atoi(argv[2] + 12);
    if (const NamedScenario* sc = find_scenario(argv[1] + 9)) return run_side(sc->run, /*a=*/false) ? 0 : 1;
    fprintf(stderr, "softnic_verbs_scenarios: unknown scenario '%s'\n", argv[1] + 9);
    return 2;
  }
  // The output is compared between a traced and an untraced run (tests/verbs): no timings in it.
  GTEST_FLAG_SET(print_time, false);
  ::testing::InitGoogleTest(&argc, argv);
  // A fabric of this run's own unless the caller chose one: ctest runs other softnic tests at once.
  setenv("SOFTNIC_FABRIC", ("verbs-scenarios-" + std::to_string(getpid())).c_str(), /*overwrite=*/0);
  return RUN_ALL_TESTS();
}

// Two ranks that exchange a few messages over one RC QP and then deadlock on purpose, for
// `sigmatrace profile --hang-dump` and the analysis that names what each QP waits for:
//   --mode recv   after the rounds, both ranks post one more receive and wait for it: each waits
//                 for a message the other never sends;
//   --mode send   after the rounds, rank 0 sends once more to rank 1, which has no receive posted
//                 (the send is retried for ever: RNR), and rank 1 waits for a completion it never
//                 asked for;
//   --mode gone   after the rounds, rank 1 ends (cleanly) and rank 0 waits to receive from it.
// Each round: rank 0 sends `bytes` to rank 1, then rank 1 to rank 0 (receives posted before).
// Without --rank it starts both ranks (fork + exec, RANK/WORLD_SIZE set), forwards SIGTERM to
// them and waits: it ends only when killed (a hang is what it is for). Output is deterministic up
// to the wait, so traced and untraced runs print the same text.
//   verbs_hang [--mode recv|send|gone] [--rounds N] [--bytes B]
#include <infiniband/verbs.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

int rank = -1;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "verbs_hang: rank %d: %s failed (errno %d)\n", rank, what, errno);
  std::exit(1);
}

struct Endpoint {
  uint32_t qpn;
  uint16_t lid;
};

struct Rank {
  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  ibv_cq* cq = nullptr;
  ibv_qp* qp = nullptr;
  ibv_mr* mr = nullptr;
  std::vector<char> buf;
  uint64_t next_wr_id = 1;
};

void open_rank(Rank* r, size_t bytes) {
  int n = 0;
  ibv_device** devs = ibv_get_device_list(&n);
  if (!devs || n < 1) fail("ibv_get_device_list");
  r->ctx = ibv_open_device(devs[0]);
  ibv_free_device_list(devs);
  if (!r->ctx) fail("ibv_open_device");
  if (!(r->pd = ibv_alloc_pd(r->ctx))) fail("ibv_alloc_pd");
  if (!(r->cq = ibv_create_cq(r->ctx, 64, nullptr, nullptr, 0))) fail("ibv_create_cq");
  r->buf.assign(2 * bytes, 0);
  if (!(r->mr = ibv_reg_mr(r->pd, r->buf.data(), r->buf.size(), IBV_ACCESS_LOCAL_WRITE))) fail("ibv_reg_mr");
  ibv_qp_init_attr a{};
  a.send_cq = a.recv_cq = r->cq;
  a.qp_type = IBV_QPT_RC;
  a.cap.max_send_wr = a.cap.max_recv_wr = 16;
  a.cap.max_send_sge = a.cap.max_recv_sge = 1;
  if (!(r->qp = ibv_create_qp(r->pd, &a))) fail("ibv_create_qp");
  ibv_qp_attr m{};
  m.qp_state = IBV_QPS_INIT;
  m.port_num = 1;
  m.qp_access_flags = IBV_ACCESS_LOCAL_WRITE;
  if (ibv_modify_qp(r->qp, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) fail("ibv_modify_qp(INIT)");
}

void connect_rank(Rank* r, const Endpoint& peer) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_1024;
  a.dest_qp_num = peer.qpn;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 12;
  a.ah_attr.dlid = peer.lid;
  a.ah_attr.port_num = 1;
  if (ibv_modify_qp(r->qp, &a,
                    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
    fail("ibv_modify_qp(RTR)");
  a = {};
  a.qp_state = IBV_QPS_RTS;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;  // for ever: a send without a receive waits, it does not fail
  a.max_rd_atomic = 1;
  if (ibv_modify_qp(r->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
    fail("ibv_modify_qp(RTS)");
}

void post_recv(Rank* r, size_t bytes) {
  ibv_sge s{reinterpret_cast<uintptr_t>(r->buf.data() + bytes), static_cast<uint32_t>(bytes), r->mr->lkey};
  ibv_recv_wr w{};
  w.wr_id = r->next_wr_id++;
  w.sg_list = &s;
  w.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  if (ibv_post_recv(r->qp, &w, &bad)) fail("ibv_post_recv");
}

void post_send(Rank* r, size_t bytes) {
  ibv_sge s{reinterpret_cast<uintptr_t>(r->buf.data()), static_cast<uint32_t>(bytes), r->mr->lkey};
  ibv_send_wr w{};
  w.wr_id = r->next_wr_id++;
  w.sg_list = &s;
  w.num_sge = 1;
  w.opcode = IBV_WR_SEND;
  w.send_flags = IBV_SEND_SIGNALED;
  ibv_send_wr* bad = nullptr;
  if (ibv_post_send(r->qp, &w, &bad)) fail("ibv_post_send");
}

// Polls until one completion (forever when none comes: the hang).
void wait_one(Rank* r) {
  ibv_wc wc{};
  int n;
  while ((n = ibv_poll_cq(r->cq, 1, &wc)) == 0) {
  }
  if (n < 0 || wc.status != IBV_WC_SUCCESS) {
    std::fprintf(stderr, "verbs_hang: rank %d: completion status %d\n", rank, n < 0 ? -1 : int(wc.status));
    std::exit(1);
  }
}

void exchange(int fd, const void* out, void* in, size_t n) {
  if (write(fd, out, n) != ssize_t(n)) fail("write to the peer");
  size_t got = 0;
  while (got < n) {
    ssize_t k = read(fd, static_cast<char*>(in) + got, n - got);
    if (k <= 0) fail("read from the peer");
    got += size_t(k);
  }
}

int run_rank(int fd, const std::string& mode, int rounds, size_t bytes) {
  Rank r;
  open_rank(&r, bytes);
  ibv_port_attr port{};
  if (ibv_query_port(r.ctx, 1, &port)) fail("ibv_query_port");
  Endpoint me{r.qp->qp_num, port.lid}, peer{};
  exchange(fd, &me, &peer, sizeof me);
  connect_rank(&r, peer);
  char ready = 1, peer_ready = 0;
  // Each round's receive is posted before the peer may send: ready is exchanged after posting.
  for (int i = 0; i < rounds; ++i) {
    post_recv(&r, bytes);
    exchange(fd, &ready, &peer_ready, 1);
    if (rank == 0) post_send(&r, bytes), wait_one(&r), wait_one(&r);  // its send, then rank 1's message
    else wait_one(&r), post_send(&r, bytes), wait_one(&r);            // rank 0's message, then its send
  }
  std::printf("verbs_hang: rank %d: %d rounds of %zu bytes done; now the %s deadlock\n", rank, rounds, bytes, mode.c_str());
  std::fflush(stdout);
  exchange(fd, &ready, &peer_ready, 1);
  if (mode == "recv") {
    post_recv(&r, bytes);  // each waits for a message the other never sends
  } else if (mode == "send") {
    if (rank == 0) post_send(&r, bytes);  // rank 1 posted no receive: retried for ever
  } else {
    if (rank == 1) return 0;  // gone: what rank 0 waits for will never come
    post_recv(&r, bytes);
  }
  wait_one(&r);
  std::printf("verbs_hang: rank %d: unexpected completion\n", rank);
  return 1;
}

pid_t g_children[2];
void forward(int sig) {
  for (pid_t p : g_children)
    if (p > 0) kill(p, sig);
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = "recv";
  int rounds = 3, fd = -1;
  size_t bytes = 4096;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) return std::fprintf(stderr, "verbs_hang: %s needs a value\n", a.c_str()), 2;
    const char* v = argv[++i];
    if (a == "--mode") mode = v;
    else if (a == "--rounds") rounds = std::atoi(v);
    else if (a == "--bytes") bytes = std::strtoul(v, nullptr, 10);
    else if (a == "--rank") rank = std::atoi(v);
    else if (a == "--fd") fd = std::atoi(v);
    else return std::fprintf(stderr, "verbs_hang: unknown option %s (--mode recv|send|gone --rounds N --bytes B)\n", a.c_str()), 2;
  }
  if ((mode != "recv" && mode != "send" && mode != "gone") || rounds < 0 || bytes < 1 || bytes > (1u << 20))
    return std::fprintf(stderr, "verbs_hang: --mode recv|send|gone, --rounds >= 0, --bytes 1..1048576\n"), 2;
  if (rank >= 0) return run_rank(fd, mode, rounds, bytes);

  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) fail("socketpair");
  std::fflush(stdout);
  for (int r = 0; r < 2; ++r) {
    g_children[r] = fork();
    if (g_children[r] < 0) fail("fork");
    if (g_children[r] == 0) {
      close(sv[1 - r]);
      const std::string rs = std::to_string(r), f = std::to_string(sv[r]), n = std::to_string(rounds), b = std::to_string(bytes);
      setenv("RANK", rs.c_str(), 1);
      setenv("WORLD_SIZE", "2", 1);
      execl("/proc/self/exe", argv[0], "--rank", rs.c_str(), "--fd", f.c_str(), "--mode", mode.c_str(), "--rounds", n.c_str(), "--bytes",
            b.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
  }
  close(sv[0]);
  close(sv[1]);
  signal(SIGTERM, forward);
  signal(SIGINT, forward);
  int failed = 0;
  for (pid_t p : g_children) {
    int status = 0;
    while (waitpid(p, &status, 0) < 0 && errno == EINTR) {
    }
    failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  return failed ? 1 : 0;
}

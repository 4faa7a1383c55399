// Two ranks that talk to each other exactly the way NCCL's IB network transport (net_ib) does, so
// that what NCCL needs from softnic and from the ibverbs provider is tested without GPUs or NCCL
// (facts: ../shared/research/ibgda-nccl-calls.md §5):
//   - libibverbs is dlopen()ed and every function resolved with dlvsym(..., "IBVERBS_1.1") (plus
//     ibv_reg_mr_iova2@IBVERBS_1.8, ibv_reg_dmabuf_mr@IBVERBS_1.12, ibv_query_ece@IBVERBS_1.10),
//     mlx5dv_is_supported@MLX5_1.8 from libmlx5; the data path goes through context->ops;
//   - ports are queried through verbs_context::query_port, as NCCL's own ibv_query_port_ex does;
//   - a thread waits for asynchronous events; the DMA-BUF probe registers fd -1;
//   - per connection: the receiver posts zero-SGE receives and writes a clear-to-send entry inline
//     into the sender's FIFO; the sender answers with RDMA_WRITE (unsignaled) + a zero-byte
//     RDMA_WRITE_WITH_IMM carrying the size (above 8 KiB, adaptive routing) or one
//     RDMA_WRITE_WITH_IMM with the data; the receiver then flushes with an RDMA_READ on a QP
//     connected to itself.
// With NCCL_PROFILER_PLUGIN set (`sigmatrace profile` sets it), it also drives that profiler
// plugin as NCCL 2.28's core and IB transport do: each iteration is an AllReduce task whose send
// and receive proxy operations each have one step, and just before posting a step's receive or
// data write it announces the QP and wr_id (the clear-to-send write and the flush read get none,
// as in NCCL).
// Without arguments it starts both ranks (fork + exec, RANK/WORLD_SIZE set) and waits; each rank
// sends to and receives from the other. Counters on stdout are deterministic, so an untraced and a
// traced run print the same text.
//   nccl_net_ib_pattern [--iters N] [--bytes B]
#include <arpa/inet.h>
#include <dlfcn.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "profiler/providers/nccl/nccl_profiler_abi.h"

namespace {

namespace nccl = sigmatrace::profiler::nccl_abi;

// NCCL's side of the profiler plugin interface: the events NCCL starts, when the plugin asked.
class ProfilerCaller {
 public:
  void load(int rank) {
    const char* name = getenv("NCCL_PROFILER_PLUGIN");
    if (!name || !*name) return;
    void* lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    p_ = lib ? static_cast<nccl::ProfilerV5*>(dlsym(lib, "ncclProfiler_v5")) : nullptr;
    if (!p_ || p_->init(&ctx_, 0x5eedc0ffee, &mask_, "pattern", 2, 2, rank, nullptr) != nccl::kSuccess) p_ = nullptr;
  }
  // A collective task and its two proxy operations (send to, receive from peer), one step each.
  void start_task(uint64_t seq, size_t count, int peer) {
    if (!on(nccl::kColl)) return;
    nccl::EventDescr d{};
    d.type = nccl::kColl;
    d.coll = {seq, "AllReduce", nullptr, nullptr, count, 0, "ncclFloat32", 1, 8, "RING", "SIMPLE", nullptr};
    p_->start_event(ctx_, &task_, &d);
    for (int send = 0; send < 2; ++send) {
      nccl::EventDescr o{};
      o.type = nccl::kProxyOp, o.parent = task_;
      o.proxy_op.pid = getpid(), o.proxy_op.channel = 0, o.proxy_op.peer = peer, o.proxy_op.steps = 1;
      o.proxy_op.is_send = send;
      p_->start_event(ctx_, &ops_[send], &o);
      nccl::EventDescr s{};
      s.type = nccl::kProxyStep, s.parent = ops_[send], s.proxy_step.step = 0;
      p_->start_event(ctx_, &steps_[send], &s);
    }
  }
  // Just before the post: the work request's QP and wr_id, for the send or the receive step.
  void announce(bool send, uint32_t qp_num, uint64_t wr_id, int opcode, size_t length) {
    if (!on(nccl::kNetPlugin)) return;
    nccl::NetIbDescr ib{};
    ib.type = nccl::kNetIbQpEvent;
    ib.qp = {0, wr_id, opcode, static_cast<int>(qp_num), length};
    nccl::EventDescr d{};
    d.type = nccl::kNetPlugin, d.parent = steps_[send];
    d.net_plugin = {nccl::kNetTypeIb | nccl::kNetIbVersion1, &ib};
    void* h = nullptr;
    p_->start_event(ctx_, &h, &d);
    p_->stop_event(h);
  }
  void end_task() {
    if (!on(nccl::kColl)) return;
    for (int i = 0; i < 2; ++i) p_->stop_event(steps_[i]), p_->stop_event(ops_[i]);
    p_->stop_event(task_);
  }
  void finalize() {
    if (p_) p_->finalize(ctx_);
  }

 private:
  bool on(int bit) const { return p_ && (mask_ & bit); }
  nccl::ProfilerV5* p_ = nullptr;
  void* ctx_ = nullptr;
  int mask_ = 0;
  void* task_ = nullptr;
  void* ops_[2] = {};
  void* steps_[2] = {};
};

constexpr int kMaxRequests = 256;        // NCCL_NET_MAX_REQUESTS (32) x NCCL_NET_IB_MAX_RECVS (8)
constexpr uint32_t kArThreshold = 8192;  // NCCL_IB_AR_THRESHOLD
constexpr int kNcclAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                            IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_RELAXED_ORDERING;

// The clear-to-send entry a receiver writes into its sender's FIFO (64 bytes, as NCCL's).
struct FifoEntry {
  uint64_t addr;
  uint64_t size;
  uint32_t rkey;
  uint32_t nreqs;
  uint64_t tag;
  uint64_t idx;  // 1 + iteration: the sender waits for it to appear
  uint64_t pad[3];
};
static_assert(sizeof(FifoEntry) == 64);

struct ConnInfo {  // exchanged between the ranks
  uint32_t lid, send_qpn, recv_qpn, fifo_rkey;
  uint64_t fifo_addr;
  uint8_t mtu;
};

int rank = -1;
[[noreturn]] void fail(const char* what, int err = errno) {
  std::fprintf(stderr, "nccl_net_ib_pattern rank %d: %s failed (errno %d)\n", rank, what, err);
  std::exit(1);
}

struct Verbs {
#define VERBS_FUNCTIONS(X)                                                                           \
  X(get_device_list, "IBVERBS_1.1", ibv_device** (*)(int*))                                          \
  X(free_device_list, "IBVERBS_1.1", void (*)(ibv_device**))                                         \
  X(get_device_name, "IBVERBS_1.1", const char* (*)(ibv_device*))                                    \
  X(open_device, "IBVERBS_1.1", ibv_context* (*)(ibv_device*))                                       \
  X(close_device, "IBVERBS_1.1", int (*)(ibv_context*))                                              \
  X(get_async_event, "IBVERBS_1.1", int (*)(ibv_context*, ibv_async_event*))                         \
  X(ack_async_event, "IBVERBS_1.1", void (*)(ibv_async_event*))                                      \
  X(query_device, "IBVERBS_1.1", int (*)(ibv_context*, ibv_device_attr*))                            \
  X(query_port, "IBVERBS_1.1", int (*)(ibv_context*, uint8_t, ibv_port_attr*))                       \
  X(query_gid, "IBVERBS_1.1", int (*)(ibv_context*, uint8_t, int, ibv_gid*))                         \
  X(query_qp, "IBVERBS_1.1", int (*)(ibv_qp*, ibv_qp_attr*, int, ibv_qp_init_attr*))                 \
  X(alloc_pd, "IBVERBS_1.1", ibv_pd* (*)(ibv_context*))                                              \
  X(dealloc_pd, "IBVERBS_1.1", int (*)(ibv_pd*))                                                     \
  X(reg_mr, "IBVERBS_1.1", ibv_mr* (*)(ibv_pd*, void*, size_t, int))                                 \
  X(dereg_mr, "IBVERBS_1.1", int (*)(ibv_mr*))                                                       \
  X(create_cq, "IBVERBS_1.1", ibv_cq* (*)(ibv_context*, int, void*, ibv_comp_channel*, int))         \
  X(destroy_cq, "IBVERBS_1.1", int (*)(ibv_cq*))                                                     \
  X(create_qp, "IBVERBS_1.1", ibv_qp* (*)(ibv_pd*, ibv_qp_init_attr*))                               \
  X(modify_qp, "IBVERBS_1.1", int (*)(ibv_qp*, ibv_qp_attr*, int))                                   \
  X(destroy_qp, "IBVERBS_1.1", int (*)(ibv_qp*))                                                     \
  X(fork_init, "IBVERBS_1.1", int (*)())                                                             \
  X(event_type_str, "IBVERBS_1.1", const char* (*)(ibv_event_type))                                  \
  X(reg_mr_iova2, "IBVERBS_1.8", ibv_mr* (*)(ibv_pd*, void*, size_t, uint64_t, unsigned))            \
  X(reg_dmabuf_mr, "IBVERBS_1.12", ibv_mr* (*)(ibv_pd*, uint64_t, size_t, uint64_t, int, int))       \
  X(query_ece, "IBVERBS_1.10", int (*)(ibv_qp*, ibv_ece*))                                           \
  X(set_ece, "IBVERBS_1.10", int (*)(ibv_qp*, ibv_ece*))
#define DECLARE(name, version, ...) std::type_identity_t<__VA_ARGS__> name = nullptr;
  VERBS_FUNCTIONS(DECLARE)
#undef DECLARE
  int (*mlx5dv_is_supported)(ibv_device*) = nullptr;

  void load() {
    void* h = dlopen("libibverbs.so", RTLD_NOW);
    if (!h) h = dlopen("libibverbs.so.1", RTLD_NOW);
    if (!h) fail("dlopen(libibverbs)");
#define RESOLVE(name, version, ...)                                               \
  name = reinterpret_cast<__VA_ARGS__>(dlvsym(h, "ibv_" #name, version));               \
  if (!name) fail("dlvsym(ibv_" #name ", " version ")");
    VERBS_FUNCTIONS(RESOLVE)
#undef RESOLVE
    void* mlx5 = dlopen("libmlx5.so", RTLD_NOW);
    if (!mlx5) mlx5 = dlopen("libmlx5.so.1", RTLD_NOW);
    if (mlx5) mlx5dv_is_supported = reinterpret_cast<int (*)(ibv_device*)>(dlvsym(mlx5, "mlx5dv_is_supported", "MLX5_1.8"));
  }
};
Verbs v;

struct Counters {
  unsigned long data_writes = 0, imm_writes = 0, data_bytes = 0, cts_writes = 0, recvs = 0, recv_imm_bytes = 0, flush_reads = 0,
                completions = 0;
};

void write_all(int fd, const void* p, size_t n) {
  if (write(fd, p, n) != static_cast<ssize_t>(n)) fail("write(peer socket)");
}
void read_all(int fd, void* p, size_t n) {
  for (size_t got = 0; got < n;) {
    ssize_t r = read(fd, static_cast<char*>(p) + got, n - got);
    if (r <= 0) fail("read(peer socket)");
    got += size_t(r);
  }
}

ibv_qp* create_rc_qp(ibv_pd* pd, ibv_cq* cq, int max_send_wr, int max_recv_wr, int inline_bytes) {
  ibv_qp_init_attr a{};
  a.send_cq = a.recv_cq = cq;
  a.qp_type = IBV_QPT_RC;
  a.cap.max_send_wr = max_send_wr;
  a.cap.max_recv_wr = max_recv_wr;
  a.cap.max_send_sge = a.cap.max_recv_sge = 1;
  a.cap.max_inline_data = inline_bytes;
  ibv_qp* qp = v.create_qp(pd, &a);
  if (!qp) fail("ibv_create_qp");
  return qp;
}

void to_init(ibv_qp* qp, int access) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = 1;
  a.qp_access_flags = access;
  if (v.modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) fail("modify_qp(INIT)");
}

void to_rtr_rts(ibv_qp* qp, uint32_t dest_qpn, uint16_t dlid, uint8_t mtu) {
  ibv_ece ece{};
  // NCCL exchanges ECE when the device has it and silently goes on without it otherwise.
  if (v.query_ece(qp, &ece) == 0) v.set_ece(qp, &ece);
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = static_cast<ibv_mtu>(mtu);
  a.dest_qp_num = dest_qpn;
  a.rq_psn = 0;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 12;
  a.ah_attr.is_global = 0;
  a.ah_attr.dlid = dlid;
  a.ah_attr.sl = 0;
  a.ah_attr.src_path_bits = 0;
  a.ah_attr.port_num = 1;
  if (v.modify_qp(qp, &a,
                  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                      IBV_QP_MIN_RNR_TIMER))
    fail("modify_qp(RTR)");
  a = {};
  a.qp_state = IBV_QPS_RTS;
  a.timeout = 20;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.sq_psn = 0;
  a.max_rd_atomic = 1;
  if (v.modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
    fail("modify_qp(RTS)");
  // NCCL reads these back when a transition fails; here they must match what was set.
  ibv_qp_attr q{};
  ibv_qp_init_attr qi{};
  if (v.query_qp(qp, &q, IBV_QP_PORT | IBV_QP_AV, &qi)) fail("ibv_query_qp");
  if (q.port_num != 1 || q.ah_attr.dlid != dlid) fail("ibv_query_qp: port or destination LID differs", 0);
}

void post_send(ibv_qp* qp, ibv_send_wr* wr) {
  ibv_send_wr* bad = nullptr;
  if (int rc = qp->context->ops.post_send(qp, wr, &bad)) fail("post_send", rc);
}

int run_rank(int peer_fd, int iters, uint32_t bytes) {
  v.load();
  if (v.fork_init()) fail("ibv_fork_init");
  int n = 0;
  ibv_device** list = v.get_device_list(&n);
  if (!list || n < 1) fail("ibv_get_device_list");
  ibv_context* ctx = v.open_device(list[0]);
  if (!ctx) fail("ibv_open_device");
  const bool mlx5 = v.mlx5dv_is_supported && v.mlx5dv_is_supported(list[0]);
  const std::string dev_name = v.get_device_name(list[0]);
  v.free_device_list(list);
  ibv_device_attr dattr{};
  ibv_port_attr pattr{};
  ibv_gid gid{};
  if (v.query_device(ctx, &dattr) || v.query_port(ctx, 1, &pattr) || v.query_gid(ctx, 1, 0, &gid)) fail("query device/port/gid");
  if (pattr.state != IBV_PORT_ACTIVE) fail("port 1 is not active", 0);
  // NCCL's own ibv_query_port_ex goes through verbs_context::query_port first (it checks
  // abi_compat and sz the way verbs_get_ctx does), and falls back to the exported symbol.
  verbs_context* vctx = verbs_get_ctx(ctx);
  if (!vctx || !verbs_get_ctx_op(ctx, query_port)) fail("verbs_context::query_port", 0);
  ibv_port_attr pattr_ex{};
  if (vctx->query_port(ctx, 1, &pattr_ex, sizeof pattr_ex) || pattr_ex.lid != pattr.lid || pattr_ex.state != pattr.state)
    fail("verbs_context::query_port differs from ibv_query_port", 0);

  // NCCL keeps one thread per port blocked on asynchronous events; any event here is an error.
  std::atomic<bool> stop{false};
  std::atomic<int> async_events{0};
  std::thread async_thread([&] {
    while (!stop.load()) {
      pollfd p{ctx->async_fd, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      ibv_async_event e;
      if (v.get_async_event(ctx, &e)) continue;
      std::fprintf(stderr, "rank %d: async event %s\n", rank, v.event_type_str(e.event_type));
      async_events++;
      v.ack_async_event(&e);
    }
  });

  // DMA-BUF probe (ncclIbDmaBufSupport): supported unless EOPNOTSUPP or EPROTONOSUPPORT.
  ibv_pd* probe_pd = v.alloc_pd(ctx);
  if (!probe_pd) fail("ibv_alloc_pd");
  errno = 0;
  ibv_mr* dmabuf = v.reg_dmabuf_mr(probe_pd, 0, 0, 0, -1, 0);
  const bool dmabuf_supported = dmabuf || (errno != EOPNOTSUPP && errno != EPROTONOSUPPORT);
  if (dmabuf) v.dereg_mr(dmabuf);
  v.dealloc_pd(probe_pd);

  ibv_pd* pd = v.alloc_pd(ctx);
  ibv_cq* send_cq = v.create_cq(ctx, 2 * kMaxRequests, nullptr, nullptr, 0);
  ibv_cq* recv_cq = v.create_cq(ctx, 2 * kMaxRequests, nullptr, nullptr, 0);
  if (!pd || !send_cq || !recv_cq) fail("alloc_pd/create_cq");

  std::vector<uint8_t> sbuf(bytes), rbuf(bytes);
  std::vector<FifoEntry> fifo(kMaxRequests);
  int flush_target = 0;
  ibv_mr* smr = v.reg_mr_iova2(pd, sbuf.data(), bytes, reinterpret_cast<uintptr_t>(sbuf.data()), kNcclAccess);
  ibv_mr* rmr = v.reg_mr_iova2(pd, rbuf.data(), bytes, reinterpret_cast<uintptr_t>(rbuf.data()), kNcclAccess);
  ibv_mr* fifo_mr = v.reg_mr(pd, fifo.data(), fifo.size() * sizeof(FifoEntry), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  ibv_mr* flush_mr = v.reg_mr(pd, &flush_target, sizeof flush_target, IBV_ACCESS_LOCAL_WRITE);
  if (!smr || !rmr || !fifo_mr || !flush_mr) fail("memory registration");

  // Send comm: one QP towards the peer's receive comm. Receive comm: one QP plus the flush QP.
  ibv_qp* send_qp = create_rc_qp(pd, send_cq, 2 * kMaxRequests, kMaxRequests, sizeof(FifoEntry));
  ibv_qp* recv_qp = create_rc_qp(pd, recv_cq, 2 * kMaxRequests, kMaxRequests, sizeof(FifoEntry));
  ibv_qp* flush_qp = create_rc_qp(pd, recv_cq, 2 * kMaxRequests, kMaxRequests, 0);
  to_init(send_qp, IBV_ACCESS_REMOTE_WRITE);
  to_init(recv_qp, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
  to_init(flush_qp, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);

  ConnInfo mine{pattr.lid, send_qp->qp_num, recv_qp->qp_num, fifo_mr->rkey, reinterpret_cast<uintptr_t>(fifo.data()),
                static_cast<uint8_t>(pattr.active_mtu)};
  ConnInfo peer{};
  write_all(peer_fd, &mine, sizeof mine);
  read_all(peer_fd, &peer, sizeof peer);
  const uint8_t mtu = std::min(mine.mtu, peer.mtu);
  to_rtr_rts(send_qp, peer.recv_qpn, static_cast<uint16_t>(peer.lid), mtu);
  to_rtr_rts(recv_qp, peer.send_qpn, static_cast<uint16_t>(peer.lid), mtu);
  to_rtr_rts(flush_qp, flush_qp->qp_num, pattr.lid, mtu);  // connected to itself
  char ready = 1;  // both sides in RTS before the first byte moves
  write_all(peer_fd, &ready, 1);
  read_all(peer_fd, &ready, 1);

  Counters c;
  const int peer_rank = 1 - rank;
  ProfilerCaller profiler;
  profiler.load(rank);
  for (int it = 0; it < iters; ++it) {
    for (uint32_t i = 0; i < bytes; ++i) sbuf[i] = static_cast<uint8_t>(rank * 31 + it * 7 + i);
    profiler.start_task(uint64_t(it), bytes / 4, peer_rank);
    // Receiver: a receive without buffers (the data arrives by RDMA WRITE), then clear-to-send.
    ibv_recv_wr rwr{};
    rwr.wr_id = uint64_t(it);
    rwr.num_sge = 0;
    ibv_recv_wr* rbad = nullptr;
    profiler.announce(false, recv_qp->qp_num, rwr.wr_id, 0, 0);
    if (int rc = recv_qp->context->ops.post_recv(recv_qp, &rwr, &rbad)) fail("post_recv", rc);
    FifoEntry cts{reinterpret_cast<uintptr_t>(rbuf.data()), bytes, rmr->rkey, 1, uint64_t(peer_rank), uint64_t(it) + 1, {}};
    ibv_sge cts_sge{reinterpret_cast<uintptr_t>(&cts), sizeof cts, 0};
    ibv_send_wr cwr{};
    cwr.wr_id = 0xc75;
    cwr.sg_list = &cts_sge;
    cwr.num_sge = 1;
    cwr.opcode = IBV_WR_RDMA_WRITE;
    cwr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
    cwr.wr.rdma.remote_addr = peer.fifo_addr + (it % kMaxRequests) * sizeof(FifoEntry);
    cwr.wr.rdma.rkey = peer.fifo_rkey;
    post_send(recv_qp, &cwr);
    c.cts_writes++;

    bool sent = false, sent_done = false, cts_done = false, received = false;
    while (!(sent_done && cts_done && received)) {
      volatile FifoEntry* slot = &fifo[it % kMaxRequests];
      if (!sent && slot->idx == uint64_t(it) + 1) {
        // Sender: the data, then the size as immediate data in a signaled WRITE_WITH_IMM.
        ibv_sge sge{reinterpret_cast<uintptr_t>(sbuf.data()), bytes, smr->lkey};
        ibv_send_wr data{}, imm{};
        data.wr_id = imm.wr_id = uint64_t(it);
        data.sg_list = &sge;
        data.num_sge = 1;
        data.opcode = IBV_WR_RDMA_WRITE;
        data.wr.rdma.remote_addr = slot->addr;
        data.wr.rdma.rkey = slot->rkey;
        imm = data;
        imm.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
        imm.send_flags = IBV_SEND_SIGNALED;
        imm.imm_data = htonl(bytes);
        profiler.announce(true, send_qp->qp_num, data.wr_id, IBV_WR_RDMA_WRITE, bytes);
        if (bytes > kArThreshold) {
          imm.num_sge = 0;  // adaptive routing: the data went ahead, the IMM write is empty
          imm.sg_list = nullptr;
          data.next = &imm;
          post_send(send_qp, &data);
          c.data_writes++;
        } else {
          post_send(send_qp, &imm);
        }
        c.imm_writes++;
        c.data_bytes += bytes;
        sent = true;
      }
      ibv_wc wc[4];
      for (ibv_cq* cq : {send_cq, recv_cq}) {
        int got = cq->context->ops.poll_cq(cq, 4, wc);
        if (got < 0) fail("poll_cq", got);
        for (int k = 0; k < got; ++k) {
          c.completions++;
          if (wc[k].status != IBV_WC_SUCCESS) fail("work completion status", int(wc[k].status));
          if (wc[k].opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
            if (ntohl(wc[k].imm_data) != bytes || wc[k].qp_num != recv_qp->qp_num) fail("RECV_RDMA_WITH_IMM contents", 0);
            c.recvs++;
            c.recv_imm_bytes += ntohl(wc[k].imm_data);
            received = true;
          } else if (wc[k].opcode == IBV_WC_RDMA_WRITE && wc[k].qp_num == send_qp->qp_num) {
            sent_done = true;
          } else if (wc[k].opcode == IBV_WC_RDMA_WRITE && wc[k].wr_id == 0xc75) {
            cts_done = true;
          } else {
            fail("unexpected completion opcode", int(wc[k].opcode));
          }
        }
      }
    }
    // Flush: an RDMA READ through the loopback QP orders the received data before it is used.
    ibv_sge fsge{reinterpret_cast<uintptr_t>(&flush_target), 1, flush_mr->lkey};
    ibv_send_wr fwr{};
    fwr.wr_id = 0xf1u;
    fwr.sg_list = &fsge;
    fwr.num_sge = 1;
    fwr.opcode = IBV_WR_RDMA_READ;
    fwr.send_flags = IBV_SEND_SIGNALED;
    fwr.wr.rdma.remote_addr = reinterpret_cast<uintptr_t>(rbuf.data());
    fwr.wr.rdma.rkey = rmr->rkey;
    post_send(flush_qp, &fwr);
    for (bool flushed = false; !flushed;) {
      ibv_wc wc;
      int got = recv_cq->context->ops.poll_cq(recv_cq, 1, &wc);
      if (got < 0) fail("poll_cq", got);
      if (got == 1) {
        c.completions++;
        if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RDMA_READ || wc.qp_num != flush_qp->qp_num) fail("flush completion", 0);
        flushed = true;
      }
    }
    c.flush_reads++;
    for (uint32_t i = 0; i < bytes; ++i)
      if (rbuf[i] != static_cast<uint8_t>(peer_rank * 31 + it * 7 + i)) fail("received data differs", 0);
    if (static_cast<uint8_t>(flush_target) != rbuf[0]) fail("flush read value", 0);
    profiler.end_task();
    // The peer may reuse its buffer only once this rank has checked the data.
    write_all(peer_fd, &ready, 1);
    read_all(peer_fd, &ready, 1);
  }

  profiler.finalize();
  stop = true;
  async_thread.join();
  for (ibv_qp* qp : {send_qp, recv_qp, flush_qp}) v.destroy_qp(qp);
  for (ibv_mr* mr : {smr, rmr, fifo_mr, flush_mr}) v.dereg_mr(mr);
  v.destroy_cq(send_cq);
  v.destroy_cq(recv_cq);
  v.dealloc_pd(pd);
  v.close_device(ctx);
  if (rank == 1) read_all(peer_fd, &ready, 1);  // rank 0 prints first: the output is the same every run
  std::printf("rank=%d device=%s mlx5=%d dmabuf=%s iters=%d bytes=%u data_writes=%lu imm_writes=%lu data_bytes=%lu cts_writes=%lu "
              "recvs=%lu recv_imm_bytes=%lu flush_reads=%lu completions=%lu async_events=%d\n",
              rank, dev_name.c_str(), mlx5 ? 1 : 0, dmabuf_supported ? "supported" : "unsupported", iters, bytes, c.data_writes,
              c.imm_writes, c.data_bytes, c.cts_writes, c.recvs, c.recv_imm_bytes, c.flush_reads, c.completions, async_events.load());
  std::fflush(stdout);
  if (rank == 0) write_all(peer_fd, &ready, 1);
  return async_events.load() == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  int iters = 100, peer_fd = -1;
  uint32_t bytes = 65536;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&] {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "nccl_net_ib_pattern: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return std::atol(argv[++i]);
    };
    if (a == "--iters") iters = int(value());
    else if (a == "--bytes") bytes = uint32_t(value());
    else if (a == "--rank") rank = int(value());
    else if (a == "--fd") peer_fd = int(value());
    else {
      std::fprintf(stderr, "nccl_net_ib_pattern: unknown option %s (use --iters N --bytes B)\n", a.c_str());
      return 2;
    }
  }
  if (iters < 1 || bytes < 1 || bytes > (1u << 30)) {
    std::fprintf(stderr, "nccl_net_ib_pattern: --iters must be >= 1 and --bytes in 1..1073741824\n");
    return 2;
  }
  if (rank >= 0) return run_rank(peer_fd, iters, bytes);

  // Launcher: one process per rank, each exec()ed so that a preloaded profiler traces it as a
  // process of its own, as mpirun's or torchrun's children are.
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) fail("socketpair");
  std::fflush(stdout);
  pid_t pids[2];
  for (int r = 0; r < 2; ++r) {
    pids[r] = fork();
    if (pids[r] < 0) fail("fork");
    if (pids[r] == 0) {
      close(sv[1 - r]);
      std::string rs = std::to_string(r), fd = std::to_string(sv[r]), it = std::to_string(iters), by = std::to_string(bytes);
      setenv("RANK", rs.c_str(), 1);
      setenv("WORLD_SIZE", "2", 1);
      setenv("LOCAL_RANK", rs.c_str(), 1);
      execl("/proc/self/exe", argv[0], "--rank", rs.c_str(), "--fd", fd.c_str(), "--iters", it.c_str(), "--bytes", by.c_str(),
            static_cast<char*>(nullptr));
      _exit(127);
    }
  }
  close(sv[0]);
  close(sv[1]);
  int failed = 0;
  for (pid_t p : pids) {
    int status = 0;
    waitpid(p, &status, 0);
    failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  return failed ? 1 : 0;
}

// The added cost of the ibverbs provider's data-path wrappers, per intercepted call, in each trace
// mode, measured side by side with the same call untraced in one invocation: ibv_post_send (one
// 64-byte RDMA write, signaled), ibv_poll_cq on an empty CQ (the busy-poll case) and returning one
// completion, and one WR through the ibv_wr_* API (start, rdma_write, set_sge, complete); the posts
// also through forwarding-only wrappers, the floor any interposition pays.
// The "provider" behind the tables is a stub laid out like rdma-core's objects, so the figure is the
// wrapper alone (lookup, call forwarding, recording), not a NIC. Results: docs/performance.md.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "profiler/lifecycle/lifecycle.h"
#include "profiler/providers/verbs/ibverbs_state.h"
#include "profiler/runtime/runtime.h"
#include "profiler/runtime/tsc.h"

using namespace sigmatrace::profiler;
using namespace sigmatrace::profiler::ibv;

namespace {

// The stub provider: each function does a store, as the smallest real one would.
volatile uint64_t g_sink;
[[gnu::noinline]] int stub_post_send(ibv_qp*, ibv_send_wr* wr, ibv_send_wr**) {
  g_sink = wr->wr_id;
  return 0;
}
[[gnu::noinline]] int stub_post_recv(ibv_qp*, ibv_recv_wr*, ibv_recv_wr**) { return 0; }
// Empty for a CQ without cq_context, one RDMA-write completion otherwise (one function for both,
// as one provider library has: the wrappers' single-provider fast path applies).
[[gnu::noinline]] int stub_poll(ibv_cq* cq, int, ibv_wc* wc) {
  if (!cq->cq_context) {
    g_sink = 0;
    return 0;
  }
  wc->wr_id = 1;
  wc->status = IBV_WC_SUCCESS;
  wc->opcode = IBV_WC_RDMA_WRITE;
  wc->byte_len = 64;
  wc->qp_num = 0x10010;
  return 1;
}
[[gnu::noinline]] void stub_wr_start(ibv_qp_ex*) { g_sink = 1; }
[[gnu::noinline]] void stub_wr_rdma_write(ibv_qp_ex*, uint32_t rkey, uint64_t raddr) { g_sink = rkey + raddr; }
[[gnu::noinline]] void stub_wr_set_sge(ibv_qp_ex*, uint32_t, uint64_t addr, uint32_t) { g_sink = addr; }
[[gnu::noinline]] int stub_wr_complete(ibv_qp_ex*) { return 0; }
[[gnu::noinline]] void stub_wr_abort(ibv_qp_ex*) {}

// The floor of interposition, for comparison: wrappers that only forward through a pointer to
// the real function, as every wrapper must, and (the _rdtsc kind) read the clock before the call,
// as a timestamped call must. What the profiler's wrappers add beyond these is their lookup and
// recording.
int (*volatile g_real_post_send)(ibv_qp*, ibv_send_wr*, ibv_send_wr**) = &stub_post_send;
void (*volatile g_real_wr_rdma_write)(ibv_qp_ex*, uint32_t, uint64_t) = &stub_wr_rdma_write;
void (*volatile g_real_wr_set_sge)(ibv_qp_ex*, uint32_t, uint64_t, uint32_t) = &stub_wr_set_sge;
int (*volatile g_real_wr_complete)(ibv_qp_ex*) = &stub_wr_complete;
volatile uint64_t g_tsc_sink;
template <bool Rdtsc>
[[gnu::noinline]] int forward_post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad) {
  const uint64_t t = Rdtsc ? read_tsc() : 0;
  const int ret = g_real_post_send(qp, wr, bad);
  if (Rdtsc) g_tsc_sink = t;
  return ret;
}
[[gnu::noinline]] void forward_wr_rdma_write(ibv_qp_ex* q, uint32_t rkey, uint64_t raddr) { g_real_wr_rdma_write(q, rkey, raddr); }
[[gnu::noinline]] void forward_wr_set_sge(ibv_qp_ex* q, uint32_t lkey, uint64_t addr, uint32_t len) { g_real_wr_set_sge(q, lkey, addr, len); }
template <bool Rdtsc>
[[gnu::noinline]] int forward_wr_complete(ibv_qp_ex* q) {
  const uint64_t t = Rdtsc ? read_tsc() : 0;
  const int ret = g_real_wr_complete(q);
  if (Rdtsc) g_tsc_sink = t;
  return ret;
}

struct Device {
  verbs_context vctx{};
  ibv_qp_ex qpx{};
  ibv_cq cq_empty{}, cq_one{};
  Device() {
    vctx.sz = sizeof(verbs_context);
    vctx.context.abi_compat = reinterpret_cast<void*>(UINTPTR_MAX);
    vctx.context.ops.post_send = &stub_post_send;
    vctx.context.ops.post_recv = &stub_post_recv;
    vctx.context.ops.poll_cq = &stub_poll;
    qpx.qp_base.context = &vctx.context;
    qpx.qp_base.qp_num = 0x10010;
    qpx.wr_start = &stub_wr_start;
    qpx.wr_rdma_write = &stub_wr_rdma_write;
    qpx.wr_set_sge = &stub_wr_set_sge;
    qpx.wr_complete = &stub_wr_complete;
    qpx.wr_abort = &stub_wr_abort;
    cq_empty.context = &vctx.context;
    cq_one.context = &vctx.context;
    cq_one.cq_context = this;
  }
  // Installs the wrappers of `mode`, as the provider does when the program opens a device and
  // creates a QP (connected: the endpoint pair is known, as after RTR).
  void trace(TraceMode mode) {
    g_mode = mode;
    patch_context(&vctx.context);
    QpState* s = track_qp(&qpx.qp_base);
    s->local_endpoint = (uint64_t{1} << 32) | 0x10010;
    s->remote_endpoint = (uint64_t{2} << 32) | 0x20020;
    patch_qp_ex(s, &qpx);
  }
  // Installs the forwarding-only wrappers (the floor), with or without a clock read.
  void forward(bool rdtsc) {
    vctx.context.ops.post_send = rdtsc ? &forward_post_send<true> : &forward_post_send<false>;
    qpx.wr_rdma_write = &forward_wr_rdma_write;
    qpx.wr_set_sge = &forward_wr_set_sge;
    qpx.wr_complete = rdtsc ? &forward_wr_complete<true> : &forward_wr_complete<false>;
  }
};

Device g_devices[6];  // untraced, aggregate, simple, full, and the floors
const char* const kNames[6] = {"untraced", "aggregate", "simple", "full", "floor_forward", "floor_forward_rdtsc"};

void BM_PostSend(benchmark::State& state, Device* d) {
  char buf[64];
  ibv_sge sge{reinterpret_cast<uintptr_t>(buf), 64, 0x11};
  ibv_send_wr wr{};
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = 0x7000;
  wr.wr.rdma.rkey = 0x22;
  ibv_send_wr* bad = nullptr;
  uint64_t dropped = g_runtime->thread_events_dropped();
  for (auto _ : state) {
    ++wr.wr_id;
    benchmark::DoNotOptimize(ibv_post_send(&d->qpx.qp_base, &wr, &bad));
  }
  state.counters["dropped"] = static_cast<double>(g_runtime->thread_events_dropped() - dropped);
}

void BM_PollCqEmpty(benchmark::State& state, Device* d) {
  ibv_wc wc[16];
  for (auto _ : state) benchmark::DoNotOptimize(ibv_poll_cq(&d->cq_empty, 16, wc));
}

void BM_PollCqOneCompletion(benchmark::State& state, Device* d) {
  ibv_wc wc[16];
  uint64_t dropped = g_runtime->thread_events_dropped();
  for (auto _ : state) benchmark::DoNotOptimize(ibv_poll_cq(&d->cq_one, 16, wc));
  state.counters["dropped"] = static_cast<double>(g_runtime->thread_events_dropped() - dropped);
}

void BM_WrApiOneWrite(benchmark::State& state, Device* d) {
  char buf[64];
  uint64_t dropped = g_runtime->thread_events_dropped();
  for (auto _ : state) {
    ibv_wr_start(&d->qpx);
    d->qpx.wr_id++;
    d->qpx.wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_rdma_write(&d->qpx, 0x22, 0x7000);
    ibv_wr_set_sge(&d->qpx, 0x11, reinterpret_cast<uintptr_t>(buf), 64);
    benchmark::DoNotOptimize(ibv_wr_complete(&d->qpx));
  }
  state.counters["dropped"] = static_cast<double>(g_runtime->thread_events_dropped() - dropped);
}

// Eight WRs per wr_start/wr_complete, as a library that batches its posts builds them: the batch's
// fixed cost is shared. time_per_wr is the iteration's time divided by its eight WRs.
void BM_WrApiBatchOfEight(benchmark::State& state, Device* d) {
  constexpr int kBatch = 8;
  char buf[64];
  uint64_t dropped = g_runtime->thread_events_dropped();
  for (auto _ : state) {
    ibv_wr_start(&d->qpx);
    for (int k = 0; k < kBatch; ++k) {
      d->qpx.wr_id++;
      d->qpx.wr_flags = k == kBatch - 1 ? IBV_SEND_SIGNALED : 0;
      ibv_wr_rdma_write(&d->qpx, 0x22, 0x7000);
      ibv_wr_set_sge(&d->qpx, 0x11, reinterpret_cast<uintptr_t>(buf), 64);
    }
    benchmark::DoNotOptimize(ibv_wr_complete(&d->qpx));
  }
  state.counters["time_per_wr"] = benchmark::Counter(static_cast<double>(state.iterations()) * kBatch,
                                                     benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["dropped"] = static_cast<double>(g_runtime->thread_events_dropped() - dropped);
}

}  // namespace

int main(int argc, char** argv) {
  // A pool large enough that full mode does not drop during a measurement; lz4 keeps the writer fast.
  setenv("SIGMATRACE_BUFFER_MB", "1536", 0);
  setenv("SIGMATRACE_CHUNK_KB", "1024", 0);
  setenv("SIGMATRACE_COMPRESSION", "lz4", 0);
  setenv("SIGMATRACE_FORCE", "1", 0);
  setenv("SIGMATRACE_PROVIDERS", "ibverbs", 0);
  setenv("SIGMATRACE_OUTPUT", "/tmp/sigmatrace-bench-verbs", 0);
  if (!start_runtime()) {
    std::fprintf(stderr, "verbs_wrapper_cost_bench: the runtime did not start\n");
    return 1;
  }
  g_devices[1].trace(TraceMode::aggregate);
  g_devices[2].trace(TraceMode::simple);
  g_devices[3].trace(TraceMode::full);
  g_devices[4].forward(/*rdtsc=*/false);
  g_devices[5].forward(/*rdtsc=*/true);
  constexpr int64_t kIterations = 3'000'000;  // fixed, so that full mode's events fit in the pool
  for (int i = 0; i < 6; ++i) {
    std::string n = kNames[i];
    benchmark::RegisterBenchmark(("post_send/" + n).c_str(), BM_PostSend, &g_devices[i])->Iterations(kIterations)->Repetitions(5)->ReportAggregatesOnly();
    if (i < 4) {  // the floors forward the data path's posts only
      benchmark::RegisterBenchmark(("poll_cq_empty/" + n).c_str(), BM_PollCqEmpty, &g_devices[i])->Iterations(kIterations)->Repetitions(5)->ReportAggregatesOnly();
      benchmark::RegisterBenchmark(("poll_cq_one/" + n).c_str(), BM_PollCqOneCompletion, &g_devices[i])->Iterations(kIterations)->Repetitions(5)->ReportAggregatesOnly();
    }
    benchmark::RegisterBenchmark(("wr_api_write/" + n).c_str(), BM_WrApiOneWrite, &g_devices[i])->Iterations(kIterations)->Repetitions(5)->ReportAggregatesOnly();
    benchmark::RegisterBenchmark(("wr_api_batch8/" + n).c_str(), BM_WrApiBatchOfEight, &g_devices[i])->Iterations(kIterations / 8)->Repetitions(5)->ReportAggregatesOnly();
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  stop_runtime();
  return 0;
}

// The cost of the nccl provider, NCCL's profiler plugin, per call NCCL makes into it (docs/nccl.md,
// results in docs/performance.md): a work request announced (NetPlugin start and stop: the per-WR
// cost, on NCCL's proxy thread), a proxy step (start, its one work request, stop), a collective
// task (start with its names, stop) and a proxy operation (start, stop). The calls are made as
// NCCL 2.28 makes them, through the plugin's ncclProfiler_v5 table with the runtime recording for
// real (Full mode), side by side with a floor: a plugin whose functions return at once, what any
// plugin NCCL calls costs it.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "profiler/lifecycle/lifecycle.h"
#include "profiler/providers/nccl/nccl_profiler_abi.h"
#include "profiler/runtime/runtime.h"

extern "C" sigmatrace::profiler::nccl_abi::ProfilerV5 ncclProfiler_v5;

namespace {

namespace abi = sigmatrace::profiler::nccl_abi;

abi::Result floor_init(void** c, uint64_t, int* mask, const char*, int, int, int, abi::DebugLogger) {
  static int context;
  *c = &context;
  *mask = abi::kColl | abi::kProxyOp | abi::kProxyStep | abi::kNetPlugin;
  return abi::kSuccess;
}
abi::Result floor_start(void*, void** h, abi::EventDescr*) {
  static int handle;
  *h = &handle;
  return abi::kSuccess;
}
abi::Result floor_stop(void*) { return abi::kSuccess; }
abi::Result floor_state(void*, int, abi::EventStateArgs*) { return abi::kSuccess; }
abi::Result floor_finalize(void*) { return abi::kSuccess; }
abi::ProfilerV5 g_floor = {"floor", floor_init, floor_start, floor_stop, floor_state, floor_finalize};

// One plugin as NCCL holds it: its context, a task, a send proxy operation and a step open.
struct Plugin {
  abi::ProfilerV5* p;
  void *context = nullptr, *task = nullptr, *op = nullptr, *step = nullptr;
  abi::NetIbDescr ib{};
  pid_t pid = getpid();  // NCCL passes the pid it took once: no system call per operation
  explicit Plugin(abi::ProfilerV5* plugin) : p(plugin) {
    int mask = 0;
    p->init(&context, 0x5eed, &mask, "bench", 1, 2, 0, nullptr);
    task = start_task(0);
    op = start_op();
    step = start_step(0);
    ib.type = abi::kNetIbQpEvent;
    ib.qp = {0, 7, 4, 0x10010, 65536};
  }
  void* start_task(uint64_t seq) {
    abi::EventDescr d{};
    d.type = abi::kColl;
    d.coll = {seq, "AllReduce", nullptr, nullptr, 16384, 0, "ncclFloat32", 2, 8, "RING", "SIMPLE", nullptr};
    void* h = nullptr;
    p->start_event(context, &h, &d);
    return h;
  }
  void* start_op() {
    abi::EventDescr d{};
    d.type = abi::kProxyOp, d.parent = task;
    d.proxy_op.pid = pid, d.proxy_op.channel = 1, d.proxy_op.peer = 1, d.proxy_op.steps = 8, d.proxy_op.is_send = 1;
    void* h = nullptr;
    p->start_event(context, &h, &d);
    return h;
  }
  void* start_step(int n) {
    abi::EventDescr d{};
    d.type = abi::kProxyStep, d.parent = op, d.proxy_step.step = n;
    void* h = nullptr;
    p->start_event(context, &h, &d);
    return h;
  }
  void announce(void* parent) {
    abi::EventDescr d{};
    d.type = abi::kNetPlugin, d.parent = parent;
    d.net_plugin = {abi::kNetTypeIb | abi::kNetIbVersion1, &ib};
    void* h = nullptr;
    p->start_event(context, &h, &d);
    p->stop_event(h);
  }
};

void BM_WorkRequest(benchmark::State& state, Plugin* pl) {
  const uint64_t dropped = sigmatrace::profiler::g_runtime->thread_events_dropped();
  for (auto _ : state) {
    pl->ib.qp.wr_id++;
    pl->announce(pl->step);
  }
  state.counters["dropped"] = static_cast<double>(sigmatrace::profiler::g_runtime->thread_events_dropped() - dropped);
}
void BM_Step(benchmark::State& state, Plugin* pl) {
  int n = 0;
  for (auto _ : state) {
    void* s = pl->start_step(++n);
    pl->announce(s);
    pl->p->stop_event(s);
  }
}
void BM_Task(benchmark::State& state, Plugin* pl) {
  uint64_t seq = 0;
  for (auto _ : state) pl->p->stop_event(pl->start_task(++seq));
}
void BM_ProxyOp(benchmark::State& state, Plugin* pl) {
  for (auto _ : state) pl->p->stop_event(pl->start_op());
}

}  // namespace

int main(int argc, char** argv) {
  setenv("SIGMATRACE_BUFFER_MB", "1536", 0);
  setenv("SIGMATRACE_CHUNK_KB", "1024", 0);
  setenv("SIGMATRACE_COMPRESSION", "lz4", 0);
  setenv("SIGMATRACE_FORCE", "1", 0);
  setenv("SIGMATRACE_MODE", "full", 0);
  setenv("SIGMATRACE_PROVIDERS", "nccl", 0);
  setenv("SIGMATRACE_OUTPUT", "/tmp/sigmatrace-bench-nccl-plugin", 0);
  if (!sigmatrace::profiler::start_runtime()) {
    std::fprintf(stderr, "nccl_plugin_cost_bench: the runtime did not start\n");
    return 1;
  }
  static Plugin floor(&g_floor), plugin(&ncclProfiler_v5);
  if (!plugin.context) {
    std::fprintf(stderr, "nccl_plugin_cost_bench: the nccl provider is not active\n");
    return 1;
  }
  constexpr int64_t kIterations = 3'000'000;  // fixed, so that the events fit in the pool
  for (auto [name, pl] : {std::pair{"floor", &floor}, std::pair{"sigmatrace", &plugin}}) {
    const std::string n = name;
    benchmark::RegisterBenchmark(("work_request/" + n).c_str(), BM_WorkRequest, pl)->Iterations(kIterations)->Repetitions(5)->ReportAggregatesOnly();
    benchmark::RegisterBenchmark(("step/" + n).c_str(), BM_Step, pl)->Iterations(kIterations)->Repetitions(5)->ReportAggregatesOnly();
    benchmark::RegisterBenchmark(("task/" + n).c_str(), BM_Task, pl)->Iterations(kIterations / 4)->Repetitions(5)->ReportAggregatesOnly();
    benchmark::RegisterBenchmark(("proxy_op/" + n).c_str(), BM_ProxyOp, pl)->Iterations(kIterations)->Repetitions(5)->ReportAggregatesOnly();
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  sigmatrace::profiler::stop_runtime();
  return 0;
}

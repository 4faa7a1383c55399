// What the ucp_worker_progress wrapper costs when there is nothing to record: a UCP worker with no
// endpoints (progress returns 0) driven through libucp's own function and through the wrapper
// that libsigmatrace exports (linked into this binary from the runtime objects, so every call of
// ucp_worker_progress here lands in it, as under LD_PRELOAD). The difference is the wrapper.
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <ucp/api/ucp.h>

#include <cstdlib>

namespace {

struct Worker {
  ucp_context_h context = nullptr;
  ucp_worker_h worker = nullptr;
  Worker() {
    setenv("UCX_TLS", "self", 0);
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features = UCP_FEATURE_TAG;
    if (ucp_init(&params, nullptr, &context) != UCS_OK) std::abort();
    ucp_worker_params_t wp{};
    wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wp.thread_mode = UCS_THREAD_MODE_SINGLE;
    if (ucp_worker_create(context, &wp, &worker) != UCS_OK) std::abort();
  }
};

Worker& worker() {
  static Worker w;
  return w;
}

void BM_ProgressDirect(benchmark::State& state) {
  using Fn = unsigned (*)(ucp_worker_h);
  void* h = dlopen("libucp.so.0", RTLD_NOW | RTLD_NOLOAD);
  auto real = reinterpret_cast<Fn>(dlsym(h, "ucp_worker_progress"));
  ucp_worker_h w = worker().worker;
  for (auto _ : state) benchmark::DoNotOptimize(real(w));
}
BENCHMARK(BM_ProgressDirect);

void BM_ProgressThroughWrapper(benchmark::State& state) {
  ucp_worker_h w = worker().worker;
  for (auto _ : state) benchmark::DoNotOptimize(ucp_worker_progress(w));
}
BENCHMARK(BM_ProgressThroughWrapper);

}  // namespace

BENCHMARK_MAIN();

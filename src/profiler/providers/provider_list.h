// The one list of providers, in initialisation order: X(name, provider_object).
// Adding a provider: a directory under providers/ defining `extern const Provider kSomethingProvider`
// and one line here (docs/writing-a-provider.md).
#pragma once

#define SIGMATRACE_PROVIDER_LIST(X) \
  X("user", kUserMarksProvider)     \
  X("nvtx", kNvtxProvider)          \
  X("ibverbs", kIbverbsProvider)    \
  X("mlx5", kMlx5Provider)          \
  X("devx", kDevxProvider)          \
  X("cuda", kCudaProvider)          \
  X("ucx", kUcxProvider)            \
  X("ofi", kOfiProvider)            \
  X("mpi", kMpiProvider)            \
  X("nccl", kNcclProvider)

namespace sigmatrace::profiler {
// Provider names without linking the providers (the CLI validates --providers with these).
inline constexpr const char* kProviderNames[] = {
#define SIGMATRACE_PROVIDER_NAME(name, object) name,
    SIGMATRACE_PROVIDER_LIST(SIGMATRACE_PROVIDER_NAME)
#undef SIGMATRACE_PROVIDER_NAME
};
}  // namespace sigmatrace::profiler

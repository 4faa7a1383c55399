// The "mpi" provider: which rank of MPI_COMM_WORLD this process is, and of how many. At start-up
// the launcher's environment (OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID, ...; read by
// identity.cpp) gives a first answer, recorded as a rank_update whose source names the variable.
// When the program initialises MPI, the MPI_Init / MPI_Init_thread shims ask MPI itself
// (PMPI_Comm_rank / PMPI_Comm_size on MPI_COMM_WORLD) and record a second rank_update with source
// "MPI_COMM_WORLD", which the analysis prefers.
//
// libmpi is never linked: the PMPI functions are looked up in the process once MPI_Init returned.
// MPI_COMM_WORLD is &ompi_mpi_comm_world in Open MPI and the integer 0x44000000 in MPICH and its
// derivatives (Intel MPI, MVAPICH, Cray MPICH); both are passed in the first argument register.
// Control path only.
#include <dlfcn.h>

#include <string>

#include "profiler/providers/dl_resolver_hooks.h"
#include "profiler/providers/provider.h"
#include "profiler/runtime/log.h"
#include "profiler/runtime/runtime.h"

namespace sigmatrace::profiler::mpi {
namespace {

std::atomic<bool> g_active{false};
RealSymbol g_real_init{"MPI_Init", nullptr, {}, {}};
RealSymbol g_real_init_thread{"MPI_Init_thread", nullptr, {}, {}};

constexpr uintptr_t kMpichCommWorld = 0x44000000;

void record_rank(long rank, long size, std::string_view source) {
  record_process_event(format::EventType::rank_update, {int64_t{rank}, int64_t{size}, source});
}

// Asks MPI for the rank and size of MPI_COMM_WORLD (after a successful MPI_Init*).
void learn_rank_from_mpi() {
  if (!g_active.load(std::memory_order_acquire)) return;
  DlsymFn ds = real_dlsym();
  if (!ds) return;
  using CommQuery = int (*)(void* comm, int* out);
  auto comm_rank = reinterpret_cast<CommQuery>(ds(RTLD_DEFAULT, "PMPI_Comm_rank"));
  auto comm_size = reinterpret_cast<CommQuery>(ds(RTLD_DEFAULT, "PMPI_Comm_size"));
  if (!comm_rank || !comm_size) return;
  void* world = ds(RTLD_DEFAULT, "ompi_mpi_comm_world");  // Open MPI: the object is the handle
  if (!world) world = reinterpret_cast<void*>(kMpichCommWorld);
  int rank = -1, size = -1;
  if (comm_rank(world, &rank) != 0 || comm_size(world, &size) != 0) {
    log_line("mpi: MPI_Comm_rank/MPI_Comm_size on MPI_COMM_WORLD failed; keeping the launcher's rank");
    return;
  }
  record_rank(rank, size, "MPI_COMM_WORLD");
  if (Runtime* rt = g_runtime) {
    if (rt->identity.rank >= 0 && rt->identity.rank != rank)
      log_line("mpi: MPI_COMM_WORLD rank %d differs from the launcher's %s=%ld", rank, rt->identity.rank_source.c_str(),
               rt->identity.rank);
  }
}

bool init_mpi(const Config&, std::string*) {
  if (Runtime* rt = g_runtime; rt && rt->identity.rank >= 0)
    record_rank(rt->identity.rank, rt->identity.world_size, rt->identity.rank_source);
  return true;
}

}  // namespace
}  // namespace sigmatrace::profiler::mpi

namespace sigmatrace::profiler {
namespace {
const char* const kMpiExports[] = {"MPI_Init", "MPI_Init_thread"};
}  // namespace
extern const Provider kMpiProvider = {"mpi", "MPI rank and size of MPI_COMM_WORLD (MPI_Init shims, launcher environment)",
                                      &mpi::init_mpi, &mpi::g_active, nullptr, kMpiExports};
}  // namespace sigmatrace::profiler

using namespace sigmatrace::profiler;

SIGMATRACE_EXPORT int MPI_Init(int* argc, char*** argv) {
  auto fn = real_function<int (*)(int*, char***)>(mpi::g_real_init);
  if (!fn) return 16;  // MPI_ERR_OTHER
  int r = fn(argc, argv);
  if (r == 0) mpi::learn_rank_from_mpi();
  return r;
}

SIGMATRACE_EXPORT int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  auto fn = real_function<int (*)(int*, char***, int, int*)>(mpi::g_real_init_thread);
  if (!fn) return 16;
  int r = fn(argc, argv, required, provided);
  if (r == 0) mpi::learn_rank_from_mpi();
  return r;
}

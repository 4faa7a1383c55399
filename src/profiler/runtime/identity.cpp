// Reads the identity once at start-up from the kernel and the launcher's environment
// (Open MPI, PMIx, PMI/MPICH, Slurm, torchrun).
#include "profiler/runtime/identity.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>

namespace sigmatrace::profiler {
namespace {

bool env_long(const char* name, long* out) {
  const char* v = getenv(name);
  if (!v || !*v) return false;
  char* end;
  long x = strtol(v, &end, 10);
  if (*end) return false;
  *out = x;
  return true;
}

std::string read_file(const char* path) {
  std::string s;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return s;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0 && s.size() < 65536) s.append(buf, static_cast<size_t>(n));
  close(fd);
  return s;
}

}  // namespace

long local_rank_from_environment() {
  long r = -1;
  for (const char* v : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID", "LOCAL_RANK"})
    if (env_long(v, &r)) break;
  return r;
}

Identity read_identity(const std::string& host_override) {
  Identity id;
  if (!host_override.empty()) {
    id.host = host_override;
  } else {
    char h[256] = {};
    gethostname(h, sizeof h - 1);
    id.host = h[0] ? h : "localhost";
  }
  id.pid = getpid();
  id.ppid = getppid();
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) id.executable.assign(exe, static_cast<size_t>(n));
  std::string cmd = read_file("/proc/self/cmdline");
  while (!cmd.empty() && cmd.back() == '\0') cmd.pop_back();
  for (char& c : cmd)
    if (c == '\0') c = ' ';
  id.cmdline = cmd;

  for (const char* v : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID", "RANK"})
    if (env_long(v, &id.rank)) {
      id.rank_source = v;
      break;
    }
  id.local_rank = local_rank_from_environment();
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS", "WORLD_SIZE"})
    if (env_long(v, &id.world_size)) break;
  for (const char* v : {"SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID", "PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid"})
    if (const char* j = getenv(v); j && *j) {
      id.job_id = j;
      break;
    }
  return id;
}

}  // namespace sigmatrace::profiler

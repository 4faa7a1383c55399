// Who this process is: host, pid, command line, rank and job from the launcher's environment.
// The analysis joins processes across nodes with these (and with hardware identities).
#pragma once
#include <string>

namespace sigmatrace::profiler {

struct Identity {
  std::string host;
  long pid = 0;
  long ppid = 0;
  std::string executable;
  std::string cmdline;     // arguments separated by single spaces
  long rank = -1;          // -1: unknown
  long local_rank = -1;
  long world_size = -1;
  std::string rank_source; // the variable the rank came from
  std::string job_id;
};

// The rank among the processes of this node the launcher gave (-1: none).
long local_rank_from_environment();

// host_override: SIGMATRACE_HOST when given.
Identity read_identity(const std::string& host_override);

}  // namespace sigmatrace::profiler

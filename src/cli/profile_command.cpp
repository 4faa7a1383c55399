// `sigmatrace profile [options] -- program args...`: sets LD_PRELOAD and the SIGMATRACE_*
// configuration, then execs the program (so it works as the command that mpirun or srun starts on
// every rank, like `nsys profile`). Options are validated here with the same parser the library
// uses, so a mistake is reported before the program starts.
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>

#include "cli/commands.h"
#include "format/experiment_layout.h"
#include "profiler/providers/provider_list.h"
#include "profiler/runtime/config.h"
#include "profiler/runtime/config_variables.h"

extern char** environ;

namespace sigmatrace::cli {

std::vector<std::string> g_command_after_separator;

namespace {

struct ProfileOptions {
  std::string output;
  std::string mode;
  std::string providers;
  std::string compression;
  std::string host;
  uint32_t buffer_mb = 0;
  uint32_t chunk_kb = 0;
  uint32_t hang_dump_s = 0;
  bool force = false;
  bool softnic = false;
  bool dry_run = false;
  std::vector<std::string> command;
};

std::string self_dir() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<size_t>(n));
  return p.substr(0, p.find_last_of('/'));
}

std::string absolute(const std::string& p) {
  if (!p.empty() && p[0] == '/') return p;
  char cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof cwd)) return p;
  return std::string(cwd) + "/" + p;
}

bool exists(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0;
}

// Where the command's own files are, relative to itself: an installed tree (the install's library
// directory as seen from its bin directory; cmake/install.cmake), else the build tree. Either
// moves as a whole: nothing names an absolute path.
#ifndef SIGMATRACE_LIBDIR_FROM_BINDIR
#define SIGMATRACE_LIBDIR_FROM_BINDIR "../lib"
#endif
std::string own_file(const std::string& installed, const std::string& in_build_tree) {
  const std::string dir = self_dir();
  const std::string a = dir + "/" SIGMATRACE_LIBDIR_FROM_BINDIR "/" + installed;
  const std::string path = exists(a) ? a : dir + "/../" + in_build_tree;
  char real[PATH_MAX];
  return realpath(path.c_str(), real) ? std::string(real) : path;  // the environment names plain paths
}

std::string prepend_path(const char* var, const std::string& entry) {
  const char* old = getenv(var);
  return old && *old ? entry + ":" + old : entry;
}

std::vector<std::string> known_providers() {
  return {std::begin(profiler::kProviderNames), std::end(profiler::kProviderNames)};
}

int run_profile(ProfileOptions& o) {
  if (o.command.empty()) {
    print_error("profile: no program given (usage: sigmatrace profile [options] -- program args...)");
    return 2;
  }
  std::string lib = own_file("libsigmatrace.so", "lib/libsigmatrace.so");
  if (!exists(lib)) {
    print_error("profile: the preload library is missing: " + lib);
    return 2;
  }
  std::map<std::string, std::string> env;  // what we set for the program
  if (!o.mode.empty()) env["SIGMATRACE_MODE"] = o.mode;
  if (o.hang_dump_s) env["SIGMATRACE_HANG_DUMP_S"] = std::to_string(o.hang_dump_s);
  if (!o.providers.empty()) env["SIGMATRACE_PROVIDERS"] = o.providers;
  if (!o.compression.empty()) env["SIGMATRACE_COMPRESSION"] = o.compression;
  if (!o.host.empty()) env["SIGMATRACE_HOST"] = o.host;
  if (o.buffer_mb) env["SIGMATRACE_BUFFER_MB"] = std::to_string(o.buffer_mb);
  if (o.chunk_kb) env["SIGMATRACE_CHUNK_KB"] = std::to_string(o.chunk_kb);

  // Validate everything the library will read: our settings over the inherited environment.
  std::vector<std::string> merged;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    if (!env.count(kv.substr(0, kv.find('=')))) merged.push_back(kv);
  }
  for (const auto& [k, v] : env) merged.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (std::string& kv : merged) envp.push_back(kv.data());
  envp.push_back(nullptr);
  profiler::Config cfg;
  std::string error;
  if (!profiler::parse_config(envp.data(), known_providers(), &cfg, &error)) {
    print_error("profile: " + error);
    return 2;
  }

  std::string dir = !o.output.empty() ? o.output : !cfg.output_dir.empty() ? cfg.output_dir : format::default_experiment_dir();
  dir = absolute(dir);
  std::string run_id = cfg.run_id.empty() ? format::launcher_run_id() : cfg.run_id;
  if (run_id.empty()) run_id = "run-" + std::to_string(getpid()) + "-" + std::to_string(time(nullptr));
  env["SIGMATRACE_OUTPUT"] = dir;
  env["SIGMATRACE_RUN_ID"] = run_id;

  if (!o.dry_run && exists(format::manifest_path(dir))) {
    std::string theirs = format::manifest_run_id(dir);
    if (theirs != run_id && !format::experiment_is_live(dir)) {
      if (!o.force) {
        print_error("profile: experiment directory " + dir + " holds a finished earlier run (run " + theirs +
                    "); use --force to overwrite it or -o to choose another");
        return 2;
      }
      if (!format::remove_finished_experiment(dir, &error)) {
        print_error("profile: " + error);
        return 2;
      }
    }
  }

  env["LD_PRELOAD"] = prepend_path("LD_PRELOAD", lib);
  // NVTX loads the library this names at its first call: the profiler, unless the program runs
  // under another tool that took the place (then the nvtx provider says so in the trace).
  const char* nvtx = getenv("NVTX_INJECTION64_PATH");
  if (!nvtx || !*nvtx) env["NVTX_INJECTION64_PATH"] = lib;
  // NCCL loads its profiler plugin from this at its first communicator: the profiler again (its
  // nccl provider), unless the program names its own plugin (the provider then says so).
  const char* nccl = getenv("NCCL_PROFILER_PLUGIN");
  if (!nccl || !*nccl) env["NCCL_PROFILER_PLUGIN"] = lib;
  if (o.softnic) {
    std::string softnic = own_file("sigmatrace/softnic", "softnic");
    if (!exists(softnic + "/libibverbs.so.1")) {
      print_error("profile: --softnic: the emulated NIC is not there (" + softnic +
                  "): build the softnic target, or install its component (cmake --install BUILD --component softnic)");
      return 2;
    }
    env["LD_LIBRARY_PATH"] = prepend_path("LD_LIBRARY_PATH", softnic);
    // softnic's stand-in for the rest of the platform (sysfs, the doorbell page as I/O memory for
    // CUDA, the emulated host's name) goes beneath the profiler: the profiler sees the program's
    // calls as on a machine with the NIC, and knows nothing of the emulation.
    const std::string platform = softnic + "/libsoftnic_platform.so.1";
    if (exists(platform)) env["LD_PRELOAD"] = prepend_path("LD_PRELOAD", lib + ":" + platform);
  }

  if (o.dry_run) {
    std::string mpirun;
    for (const auto& [k, v] : env) {
      std::printf("export %s='%s'\n", k.c_str(), v.c_str());
      mpirun += " -x " + k + "=" + v;
    }
    std::printf("# for mpirun:%s\n", mpirun.c_str());
    return 0;
  }
  for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
  std::vector<char*> argv;
  for (std::string& a : o.command) argv.push_back(a.data());
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  int err = errno;
  print_error("profile: cannot run '" + o.command[0] + "': " + strerror(err));
  return err == ENOENT ? 127 : 126;
}

}  // namespace

CommandRunner add_profile_command(CLI::App& app) {
  auto o = std::make_shared<ProfileOptions>();
  const std::string vars = "\nEnvironment (each option below sets one; the program inherits them):\n" +
                           profiler::config_variables_help();
  CLI::App* sub = app.add_subcommand("profile", "run a program under the profiler: sigmatrace profile [options] -- program args...");
  sub->footer(vars);
  sub->add_option("-o,--output", o->output, "experiment directory (default: from the job id, else the time)");
  sub->add_option("--mode", o->mode, "aggregate | simple | full (default simple)");
  sub->add_option("--providers", o->providers, "all | none | comma-separated provider names (default all)");
  sub->add_option("--compression", o->compression, "zstd | lz4 | none (default zstd)");
  sub->add_option("--buffer-mb", o->buffer_mb, "event buffer pool per process, MiB (default 64)");
  sub->add_option("--chunk-kb", o->chunk_kb, "thread buffer chunk size, KiB (default 256)");
  sub->add_option("--hang-dump", o->hang_dump_s,
                  "record each process's state once it made no progress for SECONDS (or on SIGUSR1); analyze names what waits")
      ->check(CLI::Range(1u, 86400u));
  sub->add_option("--host", o->host, "host name to record (default the real one; emulated multi-node runs)");
  sub->add_flag("--force", o->force, "overwrite a finished earlier experiment in the output directory");
  sub->add_flag("--softnic", o->softnic, "run on the emulated NIC (softnic: the build's, or the installed component) instead of the system's rdma-core");
  sub->add_flag("--dry-run", o->dry_run, "print the environment the program would get (also as mpirun -x options)");
  sub->add_option("program", o->command, "the program and its arguments (put them after -- when they have options)")
      ->expected(-1);
  return [o] {
    if (!g_command_after_separator.empty()) o->command.insert(o->command.end(), g_command_after_separator.begin(), g_command_after_separator.end());
    return run_profile(*o);
  };
}

}  // namespace sigmatrace::cli

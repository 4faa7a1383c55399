// Start-up and shut-down of the profiler inside someone else's process: configuration, experiment
// directory, trace file, writer, providers; and the ways a process ends: normal exit, termination
// and crash signals, fork (tracing is off in the child until it execs), exec (flush, then exec).
// Nothing here may change what the application sees: on any failure the profiler turns itself off
// with one line on stderr.
#include <fcntl.h>
#include <signal.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>

#include "format/chunk_codec.h"
#include "format/experiment_layout.h"
#include "format/schema.h"
#include "profiler/doorbell/doorbell_subsystem.h"
#include "profiler/lifecycle/lifecycle.h"
#include "profiler/providers/provider.h"
#include "profiler/runtime/clock_calibration.h"
#include "profiler/runtime/log.h"
#include "profiler/runtime/runtime.h"
#include "profiler/runtime/writer.h"

#ifndef SIGMATRACE_VERSION
#define SIGMATRACE_VERSION "unknown"
#endif

extern char** environ;

namespace sigmatrace::profiler {

Runtime* g_runtime = nullptr;
void on_thread_exit(void* slot);

void record_process_event(format::EventType type, std::initializer_list<FieldValue> fields) {
  if (Runtime* rt = g_runtime) rt->process_stream.append(type, read_tsc(), fields);
}

namespace {

constexpr int kTerminationSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
constexpr int kCrashSignals[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL};
constexpr uint32_t kSignalFlushTimeoutMs = 5000;
constexpr uint32_t kExitFlushTimeoutMs = 60000;

std::string provider_list(const Config& c) {
  std::string s;
  for (const std::string& p : c.providers) s += (s.empty() ? "" : ",") + p;
  return s.empty() ? "none" : s;
}

format::Metadata file_metadata(const Runtime& rt, const std::string& run_id, const ClockSample& start) {
  const Identity& id = rt.identity;
  const Config& c = rt.config;
  return {
      {"sigmatrace_version", SIGMATRACE_VERSION},
      {"host", id.host},
      {"pid", std::to_string(id.pid)},
      {"ppid", std::to_string(id.ppid)},
      {"executable", id.executable},
      {"cmdline", id.cmdline},
      {"rank", std::to_string(id.rank)},
      {"local_rank", std::to_string(id.local_rank)},
      {"world_size", std::to_string(id.world_size)},
      {"rank_source", id.rank_source},
      {"job_id", id.job_id},
      {"run_id", run_id},
      {"mode", mode_name(c.mode)},
      {"providers", provider_list(c)},
      {"buffer_mb", std::to_string(c.buffer_mb)},
      {"chunk_kb", std::to_string(c.chunk_kb)},
      {"compression", format::codec_name(c.codec)},
      {"clock_sync_ms", std::to_string(c.clock_sync_ms)},
      {"max_threads", std::to_string(c.max_threads)},
      {"tsc_invariant", rt.tsc_invariant ? "1" : "0"},
      {"start_realtime_ns", std::to_string(start.realtime_ns)},
      {"start_tsc", std::to_string(start.tsc)},
  };
}

std::string manifest_json(const Runtime& rt, const std::string& run_id, const ClockSample& start) {
  using format::json_escape;
  const Config& c = rt.config;
  std::string j = "{\n";
  j += "  \"format\": \"sigmatrace-experiment\",\n";
  j += "  \"format_version\": \"" + std::to_string(format::kFormatMajor) + "." + std::to_string(format::kFormatMinor) + "\",\n";
  j += "  \"sigmatrace_version\": \"" SIGMATRACE_VERSION "\",\n";
  j += "  \"run_id\": \"" + json_escape(run_id) + "\",\n";
  j += "  \"created_realtime_ns\": " + std::to_string(start.realtime_ns) + ",\n";
  j += "  \"created_by\": {\"host\": \"" + json_escape(rt.identity.host) + "\", \"pid\": " + std::to_string(rt.identity.pid) + "},\n";
  j += "  \"config\": {\"mode\": \"" + std::string(mode_name(c.mode)) + "\", \"providers\": \"" + json_escape(provider_list(c)) +
       "\", \"buffer_mb\": " + std::to_string(c.buffer_mb) + ", \"chunk_kb\": " + std::to_string(c.chunk_kb) +
       ", \"compression\": \"" + format::codec_name(c.codec) + "\", \"clock_sync_ms\": " + std::to_string(c.clock_sync_ms) +
       ", \"max_threads\": " + std::to_string(c.max_threads) + "}\n";
  j += "}\n";
  return j;
}

int open_trace_file(const std::string& dir, const Identity& id, bool force, std::string* path) {
  std::string base = format::trace_file_name(id.host, id.rank, id.pid);
  for (int attempt = 0; attempt < 100; ++attempt) {
    *path = dir + "/" + (attempt ? base.substr(0, base.size() - 4) + "." + std::to_string(attempt) + ".sgt" : base);
    // O_NOFOLLOW: --force truncates; a symbolic link planted under the name must not redirect it.
    int flags = O_WRONLY | O_CREAT | O_CLOEXEC | O_APPEND | O_NOFOLLOW | (force && attempt == 0 ? O_TRUNC : O_EXCL);
    int fd = open(path->c_str(), flags, 0644);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  return -1;
}

bool write_fully(int fd, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

struct sigaction g_previous_actions[NSIG];
bool g_installed[NSIG];
std::atomic<int> g_signal_flush_started{0};
std::atomic<int> g_signal_flush_done{0};

void sleep_ms_signal_safe(uint32_t ms) {
  timespec ts{0, static_cast<long>(ms) * 1000000L};
  nanosleep(&ts, nullptr);
}

void on_signal(int sig, siginfo_t*, void*) {
  int saved_errno = errno;
  Runtime* rt = g_runtime;
  bool crash = sig == SIGSEGV || sig == SIGBUS || sig == SIGABRT || sig == SIGFPE || sig == SIGILL;
  if (rt && rt->owner_pid == getpid() && rt->writer && !rt->writer->on_writer_thread()) {
    if (g_signal_flush_started.exchange(1) == 0) {
      rt->phase.store(static_cast<int>(Phase::closing));
      rt->writer->finish(crash ? format::ExitReason::crash : format::ExitReason::signal, kSignalFlushTimeoutMs);
      g_signal_flush_done.store(1, std::memory_order_release);
    } else {
      // Another thread is writing the trace out. Launchers signal twice (timeout(1) signals the
      // program and then its own process group; mpirun and batch systems repeat SIGTERM): the
      // default action of this second signal would end the process mid-flush, so it waits.
      for (uint32_t ms = 0; ms < kSignalFlushTimeoutMs + 1000 && !g_signal_flush_done.load(std::memory_order_acquire); ++ms)
        sleep_ms_signal_safe(1);
    }
  }
  // Hand the signal to what was there before us (the default action), exactly once.
  sigaction(sig, &g_previous_actions[sig], nullptr);
  errno = saved_errno;
  raise(sig);
}

void install_signal_handlers() {
  auto install = [](int sig) {
    struct sigaction old;
    if (sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO)) return;
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = &on_signal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    if (sigaction(sig, &sa, nullptr) == 0) {
      g_previous_actions[sig] = old;
      g_installed[sig] = true;
    }
  };
  for (int s : kTerminationSignals) install(s);
  for (int s : kCrashSignals) install(s);
}

void restore_signal_handlers() {
  for (int s = 1; s < NSIG; ++s) {
    if (!g_installed[s]) continue;
    struct sigaction cur;
    // Only put back what we installed: the application may have replaced it since.
    if (sigaction(s, nullptr, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == &on_signal)
      sigaction(s, &g_previous_actions[s], nullptr);
    g_installed[s] = false;
  }
}

void in_forked_child() {
  Runtime* rt = g_runtime;
  if (!rt) return;
  // The writer thread does not exist here and the trace file is the parent's: stay off until exec.
  rt->phase.store(static_cast<int>(Phase::closed));
  t_state.cur = t_state.end = nullptr;
  t_state.status = thread_finished;
  t_state.aggregate = nullptr;
  restore_signal_handlers();
}

void start_providers(Runtime* rt) {
  for (const Provider* p : all_providers()) {
    bool wanted = false;
    for (const std::string& n : rt->config.providers) wanted |= (n == p->name);
    std::string why;
    bool ok = false;
    if (wanted) {
      if (rt->config.debug_fail_provider == p->name) why = "initialisation failure injected by SIGMATRACE_DEBUG_FAIL_PROVIDER";
      else ok = p->init(rt->config, &why);
      if (!ok) log_line("provider %s disabled: %s", p->name, why.c_str());
    }
    p->active->store(ok, std::memory_order_release);
    std::string detail = wanted ? (ok ? "active" : why) : "not requested";
    rt->process_stream.append(format::EventType::provider_status, read_tsc(),
                              {std::string_view(p->name), uint64_t{ok}, std::string_view(detail)});
  }
}

// Stops recording and waits for everything recorded to be on disk.
void shut_down(format::ExitReason reason, uint32_t timeout_ms) {
  Runtime* rt = g_runtime;
  if (!rt || rt->owner_pid != getpid() || !rt->writer) return;
  int expected = static_cast<int>(Phase::recording);
  if (!rt->recording()) return;
  // Threads of the profiler's own (the doorbell pollers) record what they saw until now.
  doorbell::quiesce_doorbells();
  if (!rt->phase.compare_exchange_strong(expected, static_cast<int>(Phase::closing))) return;
  for (const Provider* p : all_providers()) p->active->store(false, std::memory_order_release);
  doorbell::stop_doorbell_recording();
  if (!rt->writer->finish(reason, timeout_ms)) log_line("the writer did not finish within %u ms; the trace may be incomplete", timeout_ms);
  rt->phase.store(static_cast<int>(Phase::closed));
  restore_signal_handlers();
  close(rt->trace_fd);
  format::release_live_lock(rt->live_lock_fd, rt->experiment_dir, rt->identity.host, rt->identity.pid);
}

bool start(Runtime* rt) {
  // set-user-ID, set-group-ID or file capabilities: the environment that configures the profiler
  // is the unprivileged caller's, and the files it would write the privileged process's.
  if (getauxval(AT_SECURE)) {
    log_line("secure-execution process (set-user-ID, set-group-ID or capabilities): profiler off");
    return false;
  }
  std::string error;
  if (!parse_config(environ, provider_names(), &rt->config, &error)) {
    log_line("%s; profiler disabled", error.c_str());
    return false;
  }
  const Config& cfg = rt->config;
  if (!cfg.enabled) return false;
  rt->owner_pid = getpid();
  rt->identity = read_identity(cfg.host);
  rt->tsc_invariant = tsc_is_invariant();
  if (!rt->tsc_invariant) log_line("warning: this CPU's TSC is not invariant; timestamps may drift across cores and power states");
  if (cfg.debug_clock_offset_ns || cfg.debug_clock_drift_ppm) skew_clock_samples(cfg.debug_clock_offset_ns, cfg.debug_clock_drift_ppm);
  ClockSample start_sample = take_clock_sample();

  std::string run_id = cfg.run_id.empty() ? format::launcher_run_id() : cfg.run_id;
  if (run_id.empty())
    run_id = rt->identity.host + "-" + std::to_string(rt->identity.pid) + "-" + std::to_string(start_sample.realtime_ns);
  rt->run_id = run_id;
  rt->experiment_dir = cfg.output_dir.empty() ? format::default_experiment_dir() : cfg.output_dir;
  format::JoinResult join = format::create_or_join_experiment(rt->experiment_dir, run_id, cfg.force);
  if (join.decision == format::JoinDecision::refused || join.decision == format::JoinDecision::failed) {
    log_line("%s; profiler disabled", join.message.c_str());
    return false;
  }
  rt->live_lock_fd = format::take_live_lock(rt->experiment_dir, rt->identity.host, rt->identity.pid);
  rt->trace_fd = open_trace_file(rt->experiment_dir, rt->identity, cfg.force, &rt->trace_path);
  if (rt->trace_fd < 0) {
    log_line("cannot create a trace file in %s: %s; profiler disabled", rt->experiment_dir.c_str(), strerror(errno));
    return false;
  }
  std::vector<uint8_t> prefix = format::encode_file_prefix(file_metadata(*rt, run_id, start_sample), format::Schema::builtin());
  if (!write_fully(rt->trace_fd, prefix.data(), prefix.size()) ||
      !format::write_manifest(rt->experiment_dir, manifest_json(*rt, run_id, start_sample))) {
    log_line("cannot write to %s: %s; profiler disabled", rt->experiment_dir.c_str(), strerror(errno));
    return false;
  }

  size_t chunk_bytes = size_t{cfg.chunk_kb} * 1024;
  uint32_t chunks = static_cast<uint32_t>(size_t{cfg.buffer_mb} * 1024 * 1024 / chunk_bytes);
  rt->max_slots = cfg.max_threads;
  void* slots = calloc(rt->max_slots, sizeof(ThreadSlot));
  if (!slots || !rt->pool.init(chunk_bytes, chunks)) {
    log_line("cannot allocate %u MiB of trace buffers; profiler disabled", cfg.buffer_mb);
    return false;
  }
  rt->slots = new (slots) ThreadSlot[rt->max_slots];
  if (pthread_key_create(&rt->thread_exit_key, &on_thread_exit) != 0) {
    log_line("cannot create a thread key; profiler disabled");
    return false;
  }
  rt->process_stream.append(format::EventType::clock_sync, start_sample.tsc, {start_sample.realtime_ns, start_sample.monotonic_ns});
  rt->writer = new Writer(rt);
  if (!rt->writer->start()) {
    log_line("cannot start the writer thread; profiler disabled");
    return false;
  }
  return true;
}

}  // namespace

std::string flush_before_exec() {
  Runtime* rt = g_runtime;
  if (!rt || rt->owner_pid != getpid() || !rt->recording()) return {};
  shut_down(format::ExitReason::exec, kExitFlushTimeoutMs);
  return rt->run_id;
}

bool start_runtime() {
  if (g_runtime) return true;
  auto* rt = new (std::nothrow) Runtime();
  if (!rt) return false;
  if (!start(rt)) {
    // Undo what start() had done: no live lock (the experiment would look live for as long as
    // the program runs) and no trace file holding a header and nothing else.
    if (rt->trace_fd >= 0) {
      close(rt->trace_fd);
      unlink(rt->trace_path.c_str());
    }
    format::release_live_lock(rt->live_lock_fd, rt->experiment_dir, rt->identity.host, rt->identity.pid);
    return false;  // rt is leaked on purpose: a writer thread that started may still reference it
  }
  g_runtime = rt;
  doorbell::configure_doorbells(rt->config);
  start_providers(rt);
  install_signal_handlers();
  pthread_atfork(nullptr, nullptr, &in_forked_child);
  return true;
}

void stop_runtime() { shut_down(format::ExitReason::normal_exit, kExitFlushTimeoutMs); }

void flush_before_underscore_exit() {
  Runtime* rt = g_runtime;
  if (!rt || rt->owner_pid != getpid() || !rt->writer || rt->writer->on_writer_thread()) return;
  int expected = static_cast<int>(Phase::recording);
  if (!rt->phase.compare_exchange_strong(expected, static_cast<int>(Phase::closing))) return;
  // Only atomics and nanosleep: a program's signal handler may be the caller. The live lock goes
  // with the process.
  rt->writer->finish(format::ExitReason::normal_exit, kSignalFlushTimeoutMs);
  rt->phase.store(static_cast<int>(Phase::closed));
}

}  // namespace sigmatrace::profiler

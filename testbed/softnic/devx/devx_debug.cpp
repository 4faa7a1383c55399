// What the devx engine is doing, for people diagnosing a GPU-initiated program that hangs on a
// machine without gdb: a state dump (every UAR register, every QP's doorbell producer index,
// consumed index, pending WQEs, last CQE written, the transport QP's state and the GPU copy in
// flight), on SIGUSR2 and when a QP or a copy stalls (SOFTNIC_DEBUG=2 or 3), with every thread's
// backtrace on the signal; and per-stage timings (SOFTNIC_DEVX_STATS=1).
//
// The signal path runs in a handler: it reads the engine's state without its lock (the engine
// may be stuck holding it, which is what the dump is for), writes with write(2) from stack
// buffers and never allocates. snprintf of integers does not allocate in glibc.
#include <dirent.h>
#include <execinfo.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cerrno>
#include <cstring>
#include <thread>

#include "core/cuda_driver.hpp"
#include "core/oracle_log.hpp"
#include "devx/devx.hpp"
#include "engine/qp_describe.hpp"
#include "mlx5/wqe.hpp"

namespace m5 = sigmatrace::mlx5;

namespace softnic::devx {
namespace {

void out(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void out(const char* fmt, ...) {
  char buf[1200];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf - 1, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if (size_t(n) > sizeof buf - 2) n = int(sizeof buf - 2);
  buf[n++] = '\n';
  ssize_t w = ::write(STDERR_FILENO, buf, size_t(n));
  (void)w;
}

double ms_since(uint64_t then, uint64_t now) { return then && now >= then ? double(now - then) / 1e6 : -1.0; }

void dump_qp(const Qp* q, uint64_t now) {
  out("  qp 0x%x: state %u, doorbell pi %u (%llu doorbells, %llu from its record), consumed %u, %llu WQEs, %zu pending, "
      "broken %d, in_error %d, stale reads %llu, stray completions %llu, last progress %.1f ms ago",
      q->qpn, q->state, q->db_pi, (unsigned long long)q->doorbells, (unsigned long long)q->recovered_doorbells, q->consumed,
      (unsigned long long)q->wqes, q->pending.size(), int(q->broken), int(q->in_error),
      (unsigned long long)q->stale_wqe_reads, (unsigned long long)q->stray_completions,
      ms_since(q->last_progress_ns, now));
  size_t shown = 0;
  for (const Pending& p : q->pending) {
    if (shown++ == 4) {
      out("    ... %zu more pending", q->pending.size() - 4);
      break;
    }
    out("    pending WQE %u (seq %llu): opcode 0x%x, signalled %d, done %d, syndrome 0x%x, posted %.1f ms ago",
        p.idx, (unsigned long long)p.seq, p.opcode, int(p.signal), int(p.done), p.syndrome,
        ms_since(p.posted_ns, now));
  }
  uint64_t shown_history = q->history_n < kWqeHistory ? q->history_n : kWqeHistory;
  for (uint64_t k = shown_history; k-- > 0;) {
    const WqeRecord& r = q->history[(q->history_n - 1 - k) % kWqeHistory];
    out("    WQE %u: opcode 0x%x, remote 0x%llx rkey 0x%x, %u bytes, first word 0x%llx, read %.1f ms ago", r.idx,
        r.opcode, (unsigned long long)r.raddr, r.rkey, r.length, (unsigned long long)r.first_word,
        ms_since(r.read_ns, now));
  }
  if (const Cq* cq = q->scq)
    out("    cq 0x%x (%s): %llu CQEs written, newest: wqe_counter %u opcode 0x%x, %.1f ms ago", cq->cqn,
        cq->collapsed ? "collapsed" : "ring", (unsigned long long)cq->produced, cq->last_wqe_counter,
        cq->last_opcode, ms_since(cq->last_write_ns, now));
  if (q->qp) {
    char line[1024];
    debug::describe_qp(q->qp, line, sizeof line);
    out("    %s", line);
  }
}

std::atomic<int> g_dumping{0};           // a dump is being written (by one thread)
std::atomic<int> g_backtraces_left{0};   // threads asked for their backtrace
std::atomic_flag g_print_lock = ATOMIC_FLAG_INIT;

void print_backtrace() {
  void* frames[48];
  int n = backtrace(frames, 48);
  out("--- thread %ld backtrace (addresses in hidden functions: addr2line -f -e LIB OFFSET):",
      long(syscall(SYS_gettid)));
  backtrace_symbols_fd(frames, n, STDERR_FILENO);
}

// Asks every other thread of the process for its backtrace.
void signal_other_threads() {
  int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY);
  if (fd < 0) return;
  pid_t self = pid_t(syscall(SYS_gettid)), pid = getpid();
  char buf[4096];
  long n;
  while ((n = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0) {
    for (long off = 0; off < n;) {
      auto* d = reinterpret_cast<struct dirent64*>(buf + off);
      off += d->d_reclen;
      pid_t tid = pid_t(atoi(d->d_name));
      if (tid <= 0 || tid == self) continue;
      g_backtraces_left.fetch_add(1);
      if (syscall(SYS_tgkill, pid, tid, SIGUSR2) != 0) g_backtraces_left.fetch_sub(1);
    }
  }
  close(fd);
}

void on_dump_signal(int, siginfo_t*, void*) {
  int saved = errno;
  if (g_backtraces_left.load() > 0) {  // asked by the dumping thread: print our stack only
    while (g_print_lock.test_and_set(std::memory_order_acquire)) {
    }
    print_backtrace();
    g_print_lock.clear(std::memory_order_release);
    g_backtraces_left.fetch_sub(1);
  } else if (g_dumping.exchange(1) == 0) {
    dump_state("SIGUSR2", true);
    print_backtrace();
    signal_other_threads();
    g_dumping.store(0);
  }
  errno = saved;
}

}  // namespace

void dump_state(const char* why, bool in_signal_handler) {
  uint64_t now = now_ns();
  const EngineClock& clk = engine_clock();
  out("softnic devx [pid %d] state dump (%s): %llu engine rounds, the last one started %.3f ms ago",
      int(getpid()), why, (unsigned long long)clk.rounds, ms_since(clk.last_round_ns, now));
  cuda::InFlight copies[16];
  int n = cuda::copies_in_flight(copies, 16);
  if (!n) out("  no GPU copy in flight");
  for (int i = 0; i < n; ++i)
    out("  GPU copy in flight on thread %ld: %s GPU 0x%llx, %llu bytes, for %.1f ms", copies[i].tid,
        copies[i].is_read ? "read from" : "write to", (unsigned long long)copies[i].dev_addr,
        (unsigned long long)copies[i].len, ms_since(copies[i].since_ns, now));
  // Asking the driver about the stream is no business of a signal handler.
  if (uint64_t since = in_signal_handler ? 0 : cuda::oldest_unlanded_post_ns())
    out("  posted GPU writes not landed for %.1f ms (a stream waiting behind a kernel?)", ms_since(since, now));
  if (const char* c = getenv("CUDA_DEVICE_MAX_CONNECTIONS")) out("  CUDA_DEVICE_MAX_CONNECTIONS=%s", c);
  for (const Uar* u : uars()) {
    uint64_t v = __atomic_load_n(reinterpret_cast<const uint64_t*>(u->pub.reg_addr), __ATOMIC_ACQUIRE);
    m5::Doorbell db = m5::decode_doorbell(v), seen = m5::decode_doorbell(u->last[0]);
    out("  uar page %u: register qpn 0x%x pi %u; engine last saw qpn 0x%x pi %u", u->pub.page_id, db.qpn,
        db.pi, seen.qpn, seen.pi);
  }
  for (const Qp* q : qps()) dump_qp(q, now);
  out("softnic devx [pid %d] end of state dump", int(getpid()));
}

namespace {

// Something worth a dump: a QP with work that has not moved, or a GPU copy that does not end.
// Copies and progress are stamped by other threads after `now` was taken: a stamp newer than
// `now` is no stall (unsigned, it would read as an age of centuries).
bool older_than(uint64_t stamp, uint64_t now, uint64_t age_ns) { return stamp && stamp < now && now - stamp > age_ns; }

const char* stall_reason(uint64_t now) {
  for (const Qp* q : qps())
    if ((q->db_pi != q->consumed || !q->pending.empty()) && older_than(q->last_progress_ns, now, kStallDumpNs))
      return "a QP with work made no progress for 5 s";
  cuda::InFlight copies[16];
  int n = cuda::copies_in_flight(copies, 16);
  for (int i = 0; i < n; ++i)
    if (older_than(copies[i].since_ns, now, kStuckCopyDumpNs)) return "a GPU copy has been in flight for 2 s";
  if (older_than(cuda::oldest_unlanded_post_ns(), now, kStuckCopyDumpNs))
    return "a posted GPU write has not landed for 2 s";
  return nullptr;
}

// Once a second: dump once per stall. The lock is taken when it can be; when the engine holds
// it for long (stuck in a copy), the dump reads without it.
void watch() {
  bool reported = false;
  for (;;) {
    sleep(1);
    bool locked = false;
    for (int i = 0; i < 100 && !(locked = mu().try_lock()); ++i) usleep(1000);
    const char* why = stall_reason(now_ns());
    if (why && !reported) dump_state(why, false);
    reported = why != nullptr;
    if (locked) mu().unlock();
  }
}

}  // namespace

void start_dump_watch() {
  static bool started = false;
  if (started) return;
  started = true;
  void* warm[2];
  backtrace(warm, 2);  // loads libgcc's unwinder now, not inside the handler
  struct sigaction sa {};
  sa.sa_sigaction = on_dump_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR2, &sa, nullptr);
  std::thread(watch).detach();  // lives as long as the process: it only reads and prints
  out("softnic devx [pid %d]: state dumps on: SIGUSR2 (with every thread's backtrace) and stalls",
      int(getpid()));
}

bool stats_enabled() {
  static const bool on = [] {
    const char* e = getenv("SOFTNIC_DEVX_STATS");
    return e && *e == '1';
  }();
  return on;
}

namespace {
void stage_line(const char* what, const StageTime& t) {
  if (t.n)
    out("    %-34s %10llu  mean %9.2f us  max %9.2f us", what, (unsigned long long)t.n,
        double(t.sum_ns) / double(t.n) / 1e3, double(t.max_ns) / 1e3);
}
}  // namespace

void print_qp_stats(const Qp* q) {
  if (!stats_enabled()) return;
  out("softnic devx [pid %d] qp 0x%x: %llu doorbells (%llu from its record), %llu WQEs, %llu stale slot reads, %llu stray "
      "completions; stage times:",
      int(getpid()), q->qpn, (unsigned long long)q->doorbells, (unsigned long long)q->recovered_doorbells, (unsigned long long)q->wqes,
      (unsigned long long)q->stale_wqe_reads, (unsigned long long)q->stray_completions);
  stage_line("SQ read (doorbell seen -> WQEs)", q->wqe_read);
  stage_line("post -> transport completion", q->transport);
  stage_line("CQE write", q->cqe_write);
}

void write_wqe_oracle(Qp* q) {
  if (!oracle::log_dir() || q->oracle_written) return;
  q->oracle_written = true;
  char line[4096];
  uint64_t wqes = 0;
  for (const Qp::OpTally& t : q->executed) wqes += t.wqes;
  int n = snprintf(line, sizeof line, "qp=0x%x type=%s wqes=%llu rejected=%llu digest=0x%016llx ops=", q->qpn, q->dci ? "dci" : "rc",
                   (unsigned long long)wqes, (unsigned long long)q->rejected, (unsigned long long)q->executed_digest);
  const char* sep = "";
  for (uint32_t op = 0; op < Qp::kOpcodes && n < int(sizeof line) - 64; ++op) {
    if (!q->executed[op].wqes) continue;
    n += snprintf(line + n, sizeof line - size_t(n), "%s%02x:%llu:%llu", sep, op, (unsigned long long)q->executed[op].wqes,
                  (unsigned long long)q->executed[op].bytes);
    sep = ",";
  }
  n += snprintf(line + n, sizeof line - size_t(n), "\n");
  oracle::append_line("wqes", line, size_t(n));
}

void print_engine_stats() {
  if (!stats_enabled()) return;
  out("softnic devx [pid %d] engine and GPU copies:", int(getpid()));
  stage_line("engine round gap while spinning", engine_clock().gap);
  cuda::CopyStats c = cuda::copy_stats();
  StageTime r{c.reads, c.read_ns, c.read_max_ns}, w{c.writes, c.write_ns, c.write_max_ns};
  stage_line("GPU read (device -> host)", r);
  stage_line("GPU write (host -> device)", w);
  out("    (copies of the whole process: the devx engine's and the verbs responder's; %llu failed)",
      (unsigned long long)c.failures);
}

}  // namespace softnic::devx

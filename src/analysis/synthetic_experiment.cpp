// See synthetic_experiment.h.
#include "analysis/synthetic_experiment.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <atomic>
#include <filesystem>
#include <thread>
#include <unordered_map>

#include "format/event_types.h"
#include "format/experiment_layout.h"
#include "format/trace_writer.h"

namespace sigmatrace::analysis {

using format::EventType;

namespace {

constexpr uint64_t kGidPrefix = 0xfe80000000000000ull;
constexpr uint64_t kQpStateMask = 1, kQpPortMask = 1 << 5, kQpAvMask = 1 << 7, kQpDestQpnMask = 1 << 20;
constexpr uint64_t kWcRecvOp = 128, kWcRecvImmOp = 129;
constexpr int64_t kRecvDelay = 2000, kSendCompletionDelay = 3000, kRecvPostLead = 1500;
constexpr int64_t kSetupCallNs = 6;  // each timed set-up call's duration

struct Ev {
  int64_t ns;
  uint32_t tid;
  uint16_t type;
  uint8_t n;
  uint64_t v[11];
};

uint64_t host_lid(int h) { return static_cast<uint64_t>(h) + 1; }
uint64_t host_gid_iface(int h) { return 0x0002c90300000000ull | static_cast<uint64_t>(h + 1); }

std::vector<int> peers_of(const SyntheticSpec& s, int r) {
  std::vector<int> p;
  int n = s.processes;
  if (n < 2) return p;
  if (s.all_to_all) {
    for (int q = 0; q < n; ++q)
      if (q != r) p.push_back(q);
  } else {
    p.push_back((r + 1) % n);
    if (n > 2) p.push_back((r + n - 1) % n);
  }
  return p;
}

bool consumes_receive(unsigned op) { return op == 1 || op == 2 || op == 3 || op == 9; }

}  // namespace

std::string synthetic_host(const SyntheticSpec& s, int rank) { return "node" + std::to_string(rank % std::max(1, s.hosts)); }

uint32_t synthetic_qp_num(const SyntheticSpec& s, int rank, int peer, int index) {
  return static_cast<uint32_t>(0x100 + (rank * s.processes + peer) * s.qps_per_pair + index);
}

SyntheticClock synthetic_clock_for(const SyntheticSpec& s, int rank) {
  if (static_cast<size_t>(rank) < s.clocks.size()) return s.clocks[static_cast<size_t>(rank)];
  SyntheticClock c;
  c.tsc_at_start = 1000000000ull * static_cast<uint64_t>(rank + 1) + 12345ull * static_cast<uint64_t>(rank);
  c.drift_ppm = 3.0 * rank - 5.0;
  return c;
}

uint64_t synthetic_tsc(const SyntheticClock& c, int64_t start_ns, int64_t ns) {
  // Rate at time t (s since start): ghz * (1 + (drift_ppm + change * t) / 1e6); integrated.
  double dt = static_cast<double>(ns - start_ns);
  double t_s = dt / 1e9;
  double ticks = c.ghz * (dt * (1 + c.drift_ppm / 1e6) + 0.5 * c.drift_change_ppm_per_s / 1e6 * t_s * dt);
  return c.tsc_at_start + static_cast<uint64_t>(static_cast<int64_t>(std::llround(ticks)));
}

SyntheticTruth write_synthetic_experiment(const std::string& dir, const SyntheticSpec& s) {
  SyntheticTruth truth;
  truth.processes = s.processes;
  int n = s.processes;
  truth.bytes.assign(static_cast<size_t>(n), std::vector<uint64_t>(static_cast<size_t>(n), 0));
  truth.ops = truth.bytes;
  std::filesystem::create_directories(dir);
  int64_t run_ns = s.message_period_ns * (s.messages_per_qp + 2);
  truth.end_ns = s.start_ns + run_ns + 1000000;

  // One process's file; each writes into its own truth (merged below), so ranks run in parallel.
  auto write_rank = [&](int r, SyntheticTruth& truth, std::string* file) -> bool {
    std::string host = synthetic_host(s, r);
    int h = r % std::max(1, s.hosts);
    long pid = 1000 + r;
    SyntheticClock clk = synthetic_clock_for(s, r);
    auto tsc = [&](int64_t ns) { return synthetic_tsc(clk, s.start_ns, ns); };
    // What the process's wall clock reads at true time ns.
    auto wall = [&](int64_t ns) {
      return ns + clk.realtime_offset_ns + static_cast<int64_t>(static_cast<double>(ns - s.start_ns) * clk.realtime_drift_ppm * 1e-6);
    };
    std::vector<Ev> ev;
    auto add = [&](int64_t ns, uint32_t tid, EventType type, std::initializer_list<uint64_t> vals) {
      Ev e{ns, tid, static_cast<uint16_t>(type), static_cast<uint8_t>(vals.size()), {}};
      std::copy(vals.begin(), vals.end(), e.v);
      ev.push_back(e);
    };
    std::vector<uint32_t> tids;
    for (int t = 0; t < std::max(1, s.threads_per_process); ++t) tids.push_back(static_cast<uint32_t>(pid * 10 + t));
    uint32_t main_tid = tids[0];
    uint64_t context = 0x7f0000001000ull + static_cast<uint64_t>(r) * 0x100000;
    int64_t setup = s.start_ns + 1000;
    // The set-up calls are timed as the profiler times them: a call_span right after each call's
    // event (kSetupCallNs long, ending 1 ns after the event).
    auto timed = [&](int64_t ns) { add(ns + 1, main_tid, EventType::call_span, {tsc(ns + 1) - tsc(ns + 1 - kSetupCallNs)}); };
    add(setup, main_tid, EventType::ibv_device_open, {context, 0x0002c90300000000ull | static_cast<uint64_t>(h + 1)});
    add(setup + 2, main_tid, EventType::ibv_port_info, {context, 1, host_lid(h), kGidPrefix, host_gid_iface(h), 1, 5, 4});
    timed(setup + 2);
    add(setup + 20, main_tid, EventType::ibv_pd_alloc, {context, context + 0x10});
    timed(setup + 20);
    add(setup + 30, main_tid, EventType::ibv_mr_reg, {context + 0x10, context + 0x20, 0x10000000ull, 1 << 26, 7, 0x100 + static_cast<uint64_t>(r), 0x200 + static_cast<uint64_t>(r), 0, static_cast<uint64_t>(-1)});
    timed(setup + 30);
    add(setup + 40, main_tid, EventType::ibv_cq_create, {context, context + 0x30, 4096});
    timed(setup + 40);

    // QPs: (peer, index) -> thread, in a fixed order.
    struct LocalQp { int peer, index; uint32_t qpn, remote_qpn; uint32_t tid; int peer_host; };
    std::vector<LocalQp> qps;
    for (int p : peers_of(s, r))
      for (int i = 0; i < s.qps_per_pair; ++i)
        qps.push_back({p, i, synthetic_qp_num(s, r, p, i), synthetic_qp_num(s, p, r, i),
                       tids[qps.size() % tids.size()], p % std::max(1, s.hosts)});
    int64_t t = setup + 100;
    for (const LocalQp& q : qps) {
      uint64_t handle = context + 0x1000 + q.qpn;
      add(t, main_tid, EventType::ibv_qp_create, {context, context + 0x10, handle, q.qpn, 2, context + 0x30, context + 0x30, 0, 256, 256, 64});
      add(t + 1, main_tid, EventType::ibv_qp_modify, {q.qpn, kQpStateMask | kQpPortMask, 1, 1, 0, 0, 0, 0, 0, 0, 0});
      add(t + 2, main_tid, EventType::ibv_qp_modify,
          {q.qpn, kQpStateMask | kQpAvMask | kQpDestQpnMask, 2, 0, q.remote_qpn, host_lid(q.peer_host), kGidPrefix,
           host_gid_iface(q.peer_host), 0, 0, 4});
      add(t + 3, main_tid, EventType::ibv_qp_modify, {q.qpn, kQpStateMask, 3, 0, 0, 0, 0, 0, 0, 0, 0});
      t += 10;
      ++truth.qps;
      if (q.peer > r) ++truth.connections;
    }
    // Receive WRs are posted shortly before the peer's message arrives (as a ring of receives
    // kept full would), so few are outstanding at any time; ids are handed out per QP in order.
    uint64_t recv_wr_id = 1u << 20;
    int64_t data_start = s.start_ns + s.message_period_ns;
    // Messages: side r posts k-th message on QP j at data_start + k*period + slot(j).
    for (size_t j = 0; j < qps.size(); ++j) {
      const LocalQp& q = qps[j];
      int64_t slot = static_cast<int64_t>((j * 97) % 1000) * (s.message_period_ns / 4000 + 1);
      int64_t peer_slot = 0;
      // The peer's slot for its QP towards us (same formula on its side: index of that QP in its list).
      {
        size_t idx = 0;
        for (int p : peers_of(s, q.peer)) {
          if (p == r) break;
          idx += static_cast<size_t>(s.qps_per_pair);
        }
        idx += static_cast<size_t>(q.index);
        peer_slot = static_cast<int64_t>((idx * 97) % 1000) * (s.message_period_ns / 4000 + 1);
      }
      for (int k = 0; k < s.messages_per_qp; ++k) {
        unsigned op = s.opcodes[static_cast<size_t>(k) % s.opcodes.size()];
        uint64_t bytes = (op == 5 || op == 6) ? 8 : s.sizes[static_cast<size_t>(k) % s.sizes.size()];
        int64_t ts = data_start + k * s.message_period_ns + slot;
        uint64_t wr_id = (static_cast<uint64_t>(j) << 32) | static_cast<uint64_t>(k);
        if (s.full_mode) {
          add(ts, q.tid, EventType::ibv_send_wr, {q.qpn, wr_id, op, bytes, 1, 0x20000000ull, 0x300, 2 /*SIGNALED*/, 0});
          static const uint64_t wc_of_wr[16] = {1, 1, 0, 0, 2, 3, 4, 6, 5, 0, 7, 0, 0, 0, 0, 8};
          add(ts + kSendCompletionDelay, q.tid, EventType::ibv_completion,
              {context + 0x30, q.qpn, wr_id, 0, wc_of_wr[op & 15], op == 4 ? bytes : 0, 0, 0, 0, 0});
        } else {
          add(ts, q.tid, EventType::ibv_post_send, {q.qpn, 1, bytes, uint64_t{1} << op, 0});
        }
        if (op == 4) truth.bytes[static_cast<size_t>(q.peer)][static_cast<size_t>(r)] += bytes;
        else truth.bytes[static_cast<size_t>(r)][static_cast<size_t>(q.peer)] += bytes;
        truth.ops[static_cast<size_t>(r)][static_cast<size_t>(q.peer)] += 1;
        if (consumes_receive(op)) ++truth.flows;
        // The peer's k-th message arrives on this QP: receive completion (and a repost), Full only.
        unsigned pop = op;  // both sides use the same opcode cycle
        if (!s.full_mode && consumes_receive(pop)) {
          int64_t peer_ts = data_start + k * s.message_period_ns + peer_slot;
          add(peer_ts + kRecvDelay - kRecvPostLead, q.tid, EventType::ibv_post_recv, {q.qpn, 1, 1 << 20, 0});
        }
        if (s.full_mode && consumes_receive(pop)) {
          int64_t peer_ts = data_start + k * s.message_period_ns + peer_slot;
          uint64_t pbytes = s.sizes[static_cast<size_t>(k) % s.sizes.size()];
          // Receive WRs complete in posting order; their ids were handed out per QP in that order.
          add(peer_ts + kRecvDelay - kRecvPostLead, q.tid, EventType::ibv_recv_wr, {q.qpn, recv_wr_id++, 1 << 20, 1, 0});
          add(peer_ts + kRecvDelay, q.tid, EventType::ibv_completion,
              {context + 0x30, q.qpn, 0 /*filled below*/, 0, pop == 1 ? kWcRecvImmOp : kWcRecvOp, pbytes, pop == 1 ? 7u : 0u, 0, q.remote_qpn, 0});
        }
      }
    }
    // Receive completion wr_ids: in posting order per QP (the ids were assigned QP by QP above).
    {
      std::stable_sort(ev.begin(), ev.end(), [](const Ev& a, const Ev& b) { return a.ns < b.ns; });
      std::vector<uint64_t> next_id(qps.size());
      uint64_t id = 1u << 20;
      for (size_t j = 0; j < qps.size(); ++j) {
        next_id[j] = id;
        int recvs = 0;
        for (int k = 0; k < s.messages_per_qp; ++k) recvs += consumes_receive(s.opcodes[static_cast<size_t>(k) % s.opcodes.size()]);
        id += static_cast<uint64_t>(recvs);
      }
      std::unordered_map<uint64_t, size_t> index_of_qpn;
      for (size_t j = 0; j < qps.size(); ++j) index_of_qpn[qps[j].qpn] = j;
      for (Ev& e : ev) {
        if (e.type != static_cast<uint16_t>(EventType::ibv_completion) || (e.v[4] != kWcRecvOp && e.v[4] != kWcRecvImmOp)) continue;
        e.v[2] = next_id[index_of_qpn.at(e.v[1])]++;
      }
    }
    int64_t end = data_start + s.messages_per_qp * s.message_period_ns + 10000;
    for (const LocalQp& q : qps) add(end, main_tid, EventType::ibv_qp_destroy, {q.qpn});
    std::stable_sort(ev.begin(), ev.end(), [](const Ev& a, const Ev& b) { return a.ns < b.ns; });

    format::Metadata meta = {
        {"sigmatrace_version", "synthetic"}, {"host", host}, {"pid", std::to_string(pid)}, {"ppid", "1"},
        {"executable", "/usr/bin/synthetic_app"}, {"cmdline", "synthetic_app"}, {"rank", s.ranks_from_mpi ? "-1" : std::to_string(r)},
        {"local_rank", std::to_string(r / std::max(1, s.hosts))}, {"world_size", std::to_string(n)},
        {"rank_source", s.ranks_from_mpi ? "" : "synthetic"}, {"job_id", "synthetic"}, {"run_id", "synthetic"},
        {"mode", s.full_mode ? "full" : "simple"}, {"providers", "ibverbs"}, {"buffer_mb", "64"},
        {"chunk_kb", std::to_string(s.chunk_bytes / 1024)}, {"compression", "zstd"}, {"clock_sync_ms", "1000"},
        {"max_threads", "1024"}, {"tsc_invariant", "1"}, {"start_realtime_ns", std::to_string(wall(s.start_ns))},
        {"start_tsc", std::to_string(tsc(s.start_ns))}};
    std::string path = dir + "/" + format::trace_file_name(host, r, pid);
    format::TraceFileWriter w;
    if (!w.open(path, meta, format::Codec::zstd, s.chunk_bytes)) return false;
    // Process stream: clock samples over the run, thread names; the rest at the end.
    int samples = std::max(0, s.clock_samples);
    for (int i = 0; i < samples; ++i) {
      int64_t ns = samples == 1 ? s.start_ns : s.start_ns + (end + 1000 - s.start_ns) * i / (samples - 1);
      w.add(0, EventType::clock_sync, tsc(ns), {static_cast<uint64_t>(wall(ns)), static_cast<uint64_t>(ns - 1700000000000000000)});
    }
    for (size_t i = 0; i < tids.size(); ++i)
      w.add(0, EventType::thread_info, tsc(s.start_ns), {uint64_t{tids[i]}, std::string_view(i ? "worker" : "main")});
    w.add(0, EventType::provider_status, tsc(s.start_ns), {std::string_view("ibverbs"), uint64_t{1}, std::string_view("")});
    if (s.ranks_from_mpi)  // as the mpi provider records it once MPI_Init returned
      w.add(0, EventType::rank_update, tsc(s.start_ns + 1000),
            {int64_t{r}, int64_t{n}, std::string_view("MPI_COMM_WORLD")});
    std::vector<format::EventField> fields;
    std::vector<uint64_t> per_thread(tids.size(), 0);
    for (const Ev& e : ev) {
      fields.assign(e.v, e.v + e.n);
      // Types with bytes fields carry their name last (device_open: name).
      if (e.type == static_cast<uint16_t>(EventType::ibv_device_open)) fields.emplace_back(std::string_view("mlx5_0"));
      const format::EventSpec* spec = format::find_builtin_spec(e.type);
      while (fields.size() < spec->field_count) fields.emplace_back(uint64_t{0});
      w.add(e.tid, e.type, tsc(e.ns), fields);
      ++per_thread[e.tid - tids[0]];  // tids are consecutive
    }
    uint64_t written = ev.size();
    for (size_t i = 0; i < tids.size(); ++i)
      w.add(0, EventType::thread_summary, tsc(end + 500),
            {uint64_t{tids[i]}, per_thread[i] + s.events_dropped, s.events_dropped, uint64_t{0}, uint64_t{0}});
    uint64_t process_events = written + static_cast<uint64_t>(samples) + tids.size() * 2 + 2;
    w.add(0, EventType::file_end, tsc(end + 1000),
          {uint64_t{0}, process_events, s.events_dropped * tids.size(), uint64_t{0}});
    if (!w.close()) return false;
    truth.events += process_events;
    *file = path;
    return true;
  };

  std::vector<SyntheticTruth> parts(static_cast<size_t>(n), truth);
  std::vector<std::string> files(static_cast<size_t>(n));
  std::atomic<int> next{0}, failed{0};
  std::vector<std::thread> pool;
  unsigned workers = std::max(1u, std::min<unsigned>(s.generator_threads, static_cast<unsigned>(n)));
  for (unsigned t = 0; t < workers; ++t)
    pool.emplace_back([&] {
      for (int r; (r = next.fetch_add(1)) < n;)
        if (!write_rank(r, parts[static_cast<size_t>(r)], &files[static_cast<size_t>(r)])) ++failed;
    });
  for (std::thread& t : pool) t.join();
  if (failed) return SyntheticTruth{};
  for (int r = 0; r < n; ++r) {
    const SyntheticTruth& p = parts[static_cast<size_t>(r)];
    for (int a = 0; a < n; ++a)
      for (int b = 0; b < n; ++b) {
        truth.bytes[static_cast<size_t>(a)][static_cast<size_t>(b)] += p.bytes[static_cast<size_t>(a)][static_cast<size_t>(b)];
        truth.ops[static_cast<size_t>(a)][static_cast<size_t>(b)] += p.ops[static_cast<size_t>(a)][static_cast<size_t>(b)];
      }
    truth.flows += p.flows, truth.events += p.events, truth.qps += p.qps, truth.connections += p.connections;
    truth.files.push_back(files[static_cast<size_t>(r)]);
  }
  return truth;
}

}  // namespace sigmatrace::analysis

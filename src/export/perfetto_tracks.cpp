// See perfetto_writer.h: the part of trace.pftrace written before the pass (the clock snapshot and
// the track descriptors) and the pids and tids Perfetto is given.
#include <map>
#include <set>

#include "analysis/aggregates.h"
#include "analysis/ibv_names.h"
#include "export/perfetto_wire.h"
#include "export/perfetto_writer.h"

namespace sigmatrace::exporter {

using namespace sigmatrace::analysis;
using namespace pftrace;

namespace {

int64_t nice_bin(int64_t span_ns) {
  // ~2000 bins over the experiment, rounded up to 1-2-5 x 10^k ns (at least 1 us).
  int64_t want = std::max<int64_t>(1000, span_ns / 2000 + 1);
  for (int64_t p = 1000;; p *= 10)
    for (int64_t m : {1, 2, 5})
      if (p * m >= want) return p * m;
}

std::string executable_name(const ProcessRow& p) {
  std::string exe = p.file->meta_value("executable");
  return exe.substr(exe.find_last_of('/') + 1);
}

}  // namespace

PerfettoIds perfetto_ids(const ExperimentModel& m) {
  // Kernel pids and tids are below 2^22 (PID_MAX_LIMIT); a host's offset goes above.
  constexpr int64_t kHostStride = int64_t{1} << 22;
  std::map<long, std::set<uint32_t>> hosts_of_pid;
  std::map<uint32_t, std::set<uint32_t>> hosts_of_tid;
  for (const ProcessRow& p : m.processes) hosts_of_pid[p.pid].insert(p.host_id);
  for (const ThreadRow& t : m.threads) hosts_of_tid[t.tid].insert(m.processes[t.process_id].host_id);
  auto offset = [&](uint32_t host) { return (static_cast<int64_t>(host % 500) + 1) * kHostStride; };
  PerfettoIds ids;
  for (const ProcessRow& p : m.processes)
    ids.pid.push_back(hosts_of_pid[p.pid].size() > 1 ? offset(p.host_id) + p.pid : p.pid);
  for (const ThreadRow& t : m.threads) {
    const uint32_t host = m.processes[t.process_id].host_id;
    ids.tid.push_back(hosts_of_tid[t.tid].size() > 1 ? offset(host) + t.tid : t.tid);
  }
  return ids;
}

bool PerfettoExport::open(const std::string& path, const ExperimentModel& m, const Aggregates* agg, bool compress,
                          const TimelineSelection& selection, std::string* error) {
  model_ = &m;
  agg_ = agg;
  compress_ = compress;
  selection_ = selection;
  const TimelineSelection& sel = selection_;
  origin_ns_ = m.start_ns - 1000000;
  ids_ = perfetto_ids(m);
  path_ = path;
  tmp_path_ = path + ".tmp";
  if (!file_.open(tmp_path_, error)) return false;
  bin_ns_ = nice_bin(m.end_ns - m.start_ns);
  ProtoWriter w;
  const uint64_t start = static_cast<uint64_t>(m.start_ns);
  {
    // Timestamps are CLOCK_REALTIME: the trace clock, so the UI shows wall-clock time. Perfetto
    // relates every file's own clock (BOOTTIME) to the trace clock, so the snapshot also carries
    // one calibration sample's CLOCK_MONOTONIC as BOOTTIME (the same on a host that never
    // suspended): without it the importer reports the two clock domains as unrelatable.
    const ClockSamplePoint* sample = nullptr;
    for (const ProcessRow& p : m.processes)
      if (!sample && !p.file->clock_samples.empty()) sample = &p.file->clock_samples.front();
    size_t p = w.begin(kPacket);
    size_t cs = w.begin(kClockSnapshot);
    size_t c = w.begin(kCsClocks);
    w.u64(kClockId, kClockRealtime);
    w.u64(kClockTimestamp, sample ? sample->realtime_ns : start);
    w.end(c);
    if (sample) {
      c = w.begin(kCsClocks);
      w.u64(kClockId, kClockBoottime);
      w.u64(kClockTimestamp, sample->monotonic_ns);
      w.end(c);
    }
    w.u64(kCsPrimary, kClockRealtime);
    w.end(cs);
    w.end(p);
  }
  {  // Processes in the order given (by host, then rank), not by pid.
    size_t p = w.begin(kPacket);
    size_t td = w.begin(kTrackDescriptor);
    w.u64(kTdUuid, 0);
    w.u64(kTdProcessOrdering, 1);
    w.end(td);
    w.end(p);
  }
  auto host_rank = [&](uint32_t host) { return static_cast<int64_t>(host) * 1000000; };
  std::vector<bool> host_selected(m.hosts.size(), false);
  for (const ProcessRow& p : m.processes)
    if (sel.has_process(p.process_id)) host_selected[p.host_id] = true;
  for (size_t h = 0; h < m.hosts.size(); ++h) {
    if (!host_selected[h]) continue;
    descriptor(&w, {track_uuid(TrackKind::host, h), 0, "host " + m.hosts[h], "the processes of this host follow", host_rank(static_cast<uint32_t>(h))});
    Track c{track_uuid(TrackKind::host_bytes, h), track_uuid(TrackKind::host, h), "bytes/s host " + m.hosts[h],
            "bytes posted per second by this host's processes (all QPs)", 0};
    c.counter_unit = "bytes/s";
    descriptor(&w, c);
  }
  for (const ProcessRow& p : m.processes) {
    if (!sel.has_process(p.process_id)) continue;
    const int64_t pid = ids_.pid[p.process_id];
    size_t pk = w.begin(kPacket);
    w.u64(kTimestamp, start);
    size_t td = w.begin(kTrackDescriptor);
    w.u64(kTdUuid, track_uuid(TrackKind::process, p.process_id));
    size_t pd = w.begin(kTdProcess);
    w.i64(kPdPid, pid);
    w.str(kPdName, process_label(p) + " " + executable_name(p));
    w.str(kPdLabels, "host " + p.host);
    if (pid != p.pid) w.str(kPdLabels, "pid " + std::to_string(p.pid) + " on " + p.host);
    w.str(kPdLabels, "mode " + p.mode);
    w.end(pd);
    w.u64(kTdChildOrdering, kExplicitOrdering);
    w.i64(kTdSiblingRank, host_rank(p.host_id) + 1 + p.process_id);
    w.end(td);
    w.end(pk);
    Track c{track_uuid(TrackKind::process_bytes, p.process_id), track_uuid(TrackKind::process, p.process_id), "bytes/s " + process_label(p),
            "bytes posted per second by this process (all QPs)", -1};
    c.counter_unit = "bytes/s";
    descriptor(&w, c);
  }
  for (const ThreadRow& t : m.threads) {
    if (!sel.has_process(t.process_id)) continue;
    size_t pk = w.begin(kPacket);
    w.u64(kTimestamp, start);
    size_t td = w.begin(kTrackDescriptor);
    w.u64(kTdUuid, track_uuid(TrackKind::thread, t.thread_id));
    size_t th = w.begin(kTdThread);
    w.i64(kThPid, ids_.pid[t.process_id]);
    w.i64(kThTid, ids_.tid[t.thread_id]);
    w.str(kThName, t.name.empty() ? std::string("thread") : t.name);
    w.end(th);
    w.end(td);
    w.end(pk);
  }
  for (const QpRow& q : m.qps) {
    if (!sel.has_process(q.process_id)) continue;
    std::string name = "QP " + std::to_string(q.qp_num) + " " + qp_type_name(q.qp_type);
    if (q.device_id != kNone) name += " " + m.devices[static_cast<size_t>(q.device_id)].name;
    if (q.remote_qp_id != kNone) {
      const QpRow& r = m.qps[static_cast<size_t>(q.remote_qp_id)];
      name += " -> " + process_label(m.processes[r.process_id]) + " QP " + std::to_string(r.qp_num);
    }
    const uint64_t parent = track_uuid(TrackKind::process, q.process_id);
    descriptor(&w, {track_uuid(TrackKind::qp, q.qp_id), parent, name, "work requests and completions of this QP", 1000000 + q.qp_id});
    Track c{track_uuid(TrackKind::qp_bytes, q.qp_id), parent, "bytes/s QP " + std::to_string(q.qp_num), "bytes posted per second on this QP",
            2000000 + q.qp_id};
    c.counter_unit = "bytes/s";
    descriptor(&w, c);
  }
  // GPU-initiated work: a doorbell track and a kernel-launch track per (process, GPU) that has a
  // GPU-initiated QP or launched kernels; a doorbells/s counter per GPU-initiated QP.
  std::set<std::pair<uint32_t, int64_t>>& gpus = gpu_tracks_;
  for (const QpRow& q : m.qps) {
    if (!q.gpu_initiated || !sel.has_process(q.process_id)) continue;
    gpus.insert({q.process_id, q.gpu});
    Track c{track_uuid(TrackKind::qp_doorbells, q.qp_id), track_uuid(TrackKind::process, q.process_id), "doorbells/s QP " + std::to_string(q.qp_num),
            "doorbells per second its GPU rang on this QP", 3000000 + q.qp_id};
    c.counter_unit = "doorbells/s";
    descriptor(&w, c);
  }
  for (const ProcessRow& p : m.processes)
    if (sel.has_process(p.process_id) && p.file->events_by_type.count("cuda_launch")) gpus.insert({p.process_id, -1});
  for (const auto& [pid, gpu] : gpus) {
    const std::string g = gpu >= 0 ? "GPU " + std::to_string(gpu) : "GPU (host-memory queues)";
    const uint64_t parent = track_uuid(TrackKind::process, pid);
    const int64_t index = static_cast<int64_t>(gpu_track_index(pid, gpu));
    descriptor(&w, {track_uuid(TrackKind::gpu_doorbells, gpu_track_index(pid, gpu)), parent, g + " doorbells",
                    "doorbells this process's GPU threads rang, as the profiler's poller saw them", 500000 + index});
    descriptor(&w, {track_uuid(TrackKind::gpu_kernels, gpu_track_index(pid, gpu)), parent, g + " kernel launches", "kernel launches (at the launch call)",
                    600000 + index});
    Track c{track_uuid(TrackKind::gpu_bytes, gpu_track_index(pid, gpu)), parent, "bytes/s " + g,
            "bytes per second of the operations recovered from this GPU's send queues (SIGMATRACE_DOORBELLS=wqe)", 700000 + index};
    c.counter_unit = "bytes/s";
    descriptor(&w, c);
  }
  append(w.buffer());
  return true;  // a write error is reported by finish()
}

}  // namespace sigmatrace::exporter

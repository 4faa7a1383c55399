// See perfetto_writer.h. Field numbers are Perfetto's documented ones (trace_packet.proto,
// track_event.proto, track_descriptor.proto, debug_annotation.proto, counter_descriptor.proto);
// tests/analysis/perfetto_subset.proto lists the subset used here for decoding in tests.
#include "export/perfetto_writer.h"

#include <algorithm>
#include <cinttypes>
#include <map>
#include <cstdio>
#include <set>
#include <vector>

#include "analysis/aggregates.h"
#include "analysis/ibv_names.h"
#include "export/protobuf_writer.h"

namespace sigmatrace::exporter {

using namespace sigmatrace::analysis;

namespace {

// TracePacket
constexpr uint32_t kPacket = 1, kTimestamp = 8, kSequenceId = 10, kTrackEvent = 11, kTrackDescriptor = 60;
// TrackDescriptor
constexpr uint32_t kTdUuid = 1, kTdName = 2, kTdParent = 5, kTdCounter = 8, kTdChildOrdering = 11, kTdSiblingRank = 12,
                   kTdDescription = 14, kTdMergeBehavior = 15;
// CounterDescriptor
constexpr uint32_t kCdUnitName = 6;
// TrackEvent
constexpr uint32_t kTeDebug = 4, kTeType = 9, kTeTrack = 11, kTeCategories = 22, kTeName = 23, kTeDoubleValue = 44,
                   kTeFlowIds = 47, kTeTerminatingFlowIds = 48;
constexpr uint64_t kSliceBegin = 1, kSliceEnd = 2, kInstant = 3, kCounter = 4;
// DebugAnnotation
constexpr uint32_t kDaName = 10, kDaUint = 3, kDaInt = 4, kDaString = 6;
constexpr uint64_t kExplicitOrdering = 3, kMergeNone = 2;

void descriptor(ProtoWriter* w, uint64_t uuid, uint64_t parent, const std::string& name, const std::string& description,
                int64_t rank, bool counter, const char* unit = "bytes/s") {
  size_t p = w->begin(kPacket);
  size_t td = w->begin(kTrackDescriptor);
  w->u64(kTdUuid, uuid);
  if (parent) w->u64(kTdParent, parent);
  w->str(kTdName, name);
  if (!description.empty()) w->str(kTdDescription, description);
  w->u64(kTdChildOrdering, kExplicitOrdering);
  w->i64(kTdSiblingRank, rank);
  w->u64(kTdMergeBehavior, kMergeNone);  // same-named siblings (e.g. two "main" threads) stay apart
  if (counter) {
    size_t c = w->begin(kTdCounter);
    w->str(kCdUnitName, unit);
    w->end(c);
  }
  w->end(td);
  w->end(p);
}

void annotation(ProtoWriter* w, const char* name, uint64_t v) {
  size_t a = w->begin(kTeDebug);
  w->str(kDaName, name);
  w->u64(kDaUint, v);
  w->end(a);
}
void annotation_i(ProtoWriter* w, const char* name, int64_t v) {
  size_t a = w->begin(kTeDebug);
  w->str(kDaName, name);
  w->i64(kDaInt, v);
  w->end(a);
}
void annotation(ProtoWriter* w, const char* name, std::string_view v) {
  size_t a = w->begin(kTeDebug);
  w->str(kDaName, name);
  w->str(kDaString, v);
  w->end(a);
}

int64_t nice_bin(int64_t span_ns) {
  // ~2000 bins over the experiment, rounded up to 1-2-5 x 10^k ns (at least 1 us).
  int64_t want = std::max<int64_t>(1000, span_ns / 2000 + 1);
  for (int64_t p = 1000;; p *= 10)
    for (int64_t m : {1, 2, 5})
      if (p * m >= want) return p * m;
}

class PerfettoFileSink : public FileSink {
 public:
  PerfettoFileSink(PerfettoExport* out, uint32_t process_id) : out_(out), m_(out->model()), pid_(process_id) {
    seq_ = process_id + 1;
    first_qp_ = m_.qps.size();
    size_t last = 0;
    for (const auto& [num, ids] : m_.processes[pid_].qps_by_num)
      for (uint32_t id : ids) first_qp_ = std::min<size_t>(first_qp_, id), last = std::max<size_t>(last, id + 1);
    if (first_qp_ > last) first_qp_ = last = 0;
    qp_bins_.resize(last - first_qp_);
    qp_doorbell_bins_.resize(last - first_qp_);
    bins_ = static_cast<size_t>((m_.end_ns - m_.start_ns) / out_->bin_ns()) + 1;
  }
  ~PerfettoFileSink() override { flush(); }

  void call(const CallRecord& r) override {
    uint64_t track = r.thread_id >= 0 ? track_uuid(TrackKind::thread, static_cast<uint64_t>(r.thread_id))
                                      : track_uuid(TrackKind::process, pid_);
    size_t te = begin_event(r.ts_ns, kSliceBegin, track);
    w_.str(kTeName, r.name);
    w_.str(kTeCategories, "ibv");
    if (r.qp_id >= 0) annotation(&w_, "qp_num", m_.qps[static_cast<size_t>(r.qp_id)].qp_num);
    if (r.count) annotation(&w_, "count", r.count);
    if (r.bytes) annotation(&w_, "bytes", r.bytes);
    if (r.result) annotation_i(&w_, "result", r.result);
    end_event(te);
    te = begin_event(r.ts_ns + r.dur_ns, kSliceEnd, track);
    end_event(te);
  }

  void work_request(const OpRecord& r) override {
    if (r.qp_id >= 0 && r.op_class != kOpRecv) count_bytes(r.qp_id, r.ts_ns, r.bytes);
    uint64_t track = r.qp_id >= 0 ? track_uuid(TrackKind::qp, static_cast<uint64_t>(r.qp_id))
                                  : r.thread_id >= 0 ? track_uuid(TrackKind::thread, static_cast<uint64_t>(r.thread_id))
                                                     : track_uuid(TrackKind::process, pid_);
    size_t te = begin_event(r.ts_ns, kInstant, track);
    w_.str(kTeName, op_class_name(r.op_class));
    w_.str(kTeCategories, std::string_view(r.layer) != "ibv" ? r.layer : r.is_call ? "ibv.call" : "ibv.wr");
    annotation(&w_, "bytes", r.bytes);
    if (r.is_call) annotation(&w_, "wr_count", r.wr_count);
    else annotation(&w_, "wr_id", r.wr_id);
    if (r.peer_process_id >= 0) annotation(&w_, "peer", process_label(m_.processes[static_cast<size_t>(r.peer_process_id)]));
    if (r.flow_id && r.op_class != kOpRecv) w_.fixed64(kTeFlowIds, r.flow_id);
    end_event(te);
  }

  void completion(const CompletionRecord& r) override {
    uint64_t track = r.qp_id >= 0 ? track_uuid(TrackKind::qp, static_cast<uint64_t>(r.qp_id))
                                  : track_uuid(TrackKind::process, pid_);
    size_t te = begin_event(r.ts_ns, kInstant, track);
    std::string name = r.status == 0 ? "completion " + wc_opcode_name(r.opcode) : "completion " + wc_status_name(r.status);
    w_.str(kTeName, name);
    w_.str(kTeCategories, r.status == 0 ? "ibv.wc" : "ibv.wc,error");
    annotation(&w_, "wr_id", r.wr_id);
    annotation(&w_, "byte_len", r.byte_len);
    if (r.flow_id) w_.fixed64(kTeTerminatingFlowIds, r.flow_id);
    end_event(te);
  }

  void error(const ErrorRecord& r) override {
    if (r.kind == "completion") return;  // already an instant on the QP track
    uint64_t track = r.thread_id >= 0 ? track_uuid(TrackKind::thread, static_cast<uint64_t>(r.thread_id))
                                      : track_uuid(TrackKind::process, pid_);
    size_t te = begin_event(r.ts_ns, kInstant, track);
    w_.str(kTeName, "error " + r.what);
    w_.str(kTeCategories, "error");
    annotation_i(&w_, "error", r.error);
    annotation(&w_, "object", r.object);
    end_event(te);
  }

  void mark(const MarkRecord& r) override {
    uint64_t track = r.thread_id >= 0 ? track_uuid(TrackKind::thread, static_cast<uint64_t>(r.thread_id))
                                      : track_uuid(TrackKind::process, pid_);
    size_t te = begin_event(r.ts_ns, kInstant, track);
    w_.str(kTeName, "mark " + std::to_string(r.id));
    annotation(&w_, "value", r.value);
    end_event(te);
  }

  void doorbell(const DoorbellRecord& r) override {
    if (r.qp_id >= 0) {
      std::vector<uint64_t>& bins = qp_doorbell_bins_[static_cast<size_t>(r.qp_id) - first_qp_];
      if (bins.empty()) bins.assign(bins_, 0);
      bins[bin_of(r.ts_ns)] += 1;
    }
    size_t te = begin_event(r.ts_ns, kInstant, track_uuid(TrackKind::gpu_doorbells, gpu_track_index(pid_, r.gpu)));
    const char* name = r.wqe_class == 1 ? "data doorbell" : r.wqe_class == 2 ? "control doorbell" : "doorbell";
    w_.str(kTeName, r.blueflame ? "BlueFlame " + std::string(name) : std::string(name));
    w_.str(kTeCategories, "gpu.doorbell");
    annotation(&w_, "qp_num", r.qp_num);
    annotation(&w_, "producer_index", r.producer_index);
    annotation(&w_, "delta", r.delta);
    if (r.wqe_class) annotation(&w_, "wqes", r.wqes);
    if (r.kernel) annotation(&w_, "kernel", *r.kernel);
    if (r.qp_id >= 0) {
      const QpRow& q = m_.qps[static_cast<size_t>(r.qp_id)];
      if (q.remote_qp_id != kNone)
        annotation(&w_, "peer", process_label(m_.processes[m_.qps[static_cast<size_t>(q.remote_qp_id)].process_id]));
    }
    end_event(te);
  }

  void gpu_op(const OpRecord& r, const GpuWqeRecord& w) override {
    if (r.qp_id >= 0 && r.op_class != kOpNop) count_bytes(r.qp_id, r.ts_ns, r.bytes);
    if (out_->has_gpu_track(pid_, w.gpu)) {
      std::vector<uint64_t>& bins = gpu_bins_[w.gpu];
      if (bins.empty()) bins.assign(bins_, 0);
      bins[bin_of(r.ts_ns)] += r.bytes;
    }
    uint64_t track = r.qp_id >= 0 ? track_uuid(TrackKind::qp, static_cast<uint64_t>(r.qp_id)) : track_uuid(TrackKind::process, pid_);
    size_t te = begin_event(r.ts_ns, kInstant, track);
    w_.str(kTeName, op_class_name(r.op_class));
    w_.str(kTeCategories, "gpu.wqe");
    annotation(&w_, "bytes", r.bytes);
    annotation(&w_, "wqe_index", w.wqe_index);
    char hex[24];
    snprintf(hex, sizeof hex, "0x%" PRIx64, w.remote_addr);
    if (w.rkey) annotation(&w_, "remote_addr", std::string_view(hex)), annotation(&w_, "rkey", w.rkey);
    if (w.inline_data) annotation(&w_, "inline", uint64_t{1});
    if (r.op_class == kOpAtomicFa || r.op_class == kOpAtomicCs) annotation(&w_, "operand", w.swap_add);
    if (w.kernel) annotation(&w_, "kernel", *w.kernel);
    if (r.peer_process_id >= 0) annotation(&w_, "peer", process_label(m_.processes[static_cast<size_t>(r.peer_process_id)]));
    end_event(te);
  }

  void launch(const LaunchRecord& r) override {
    const int64_t gpu = out_->has_gpu_track(pid_, r.gpu) ? r.gpu : -1;
    size_t te = begin_event(r.ts_ns, kInstant, track_uuid(TrackKind::gpu_kernels, gpu_track_index(pid_, gpu)));
    w_.str(kTeName, r.name ? "launch " + *r.name : std::string("launch"));
    w_.str(kTeCategories, "gpu.launch");
    annotation(&w_, "grid", std::to_string(r.grid[0]) + "x" + std::to_string(r.grid[1]) + "x" + std::to_string(r.grid[2]));
    annotation(&w_, "block", std::to_string(r.block[0]) + "x" + std::to_string(r.block[1]) + "x" + std::to_string(r.block[2]));
    annotation(&w_, "stream", r.stream);
    if (r.result) annotation_i(&w_, "result", r.result);
    if (gpu != r.gpu) annotation_i(&w_, "device", r.gpu);
    end_event(te);
  }

  void finish() override {
    for (size_t i = 0; i < qp_doorbell_bins_.size(); ++i)
      if (!qp_doorbell_bins_[i].empty()) emit_counter(track_uuid(TrackKind::qp_doorbells, first_qp_ + i), qp_doorbell_bins_[i]);
    // Bytes/s counters: per QP, then the process's sum.
    std::vector<uint64_t> process_bins;
    for (size_t i = 0; i < qp_bins_.size(); ++i) {
      if (qp_bins_[i].empty()) continue;
      if (process_bins.empty()) process_bins.assign(bins_, 0);
      for (size_t b = 0; b < bins_; ++b) process_bins[b] += qp_bins_[i][b];
      emit_counter(track_uuid(TrackKind::qp_bytes, first_qp_ + i), qp_bins_[i]);
    }
    if (!process_bins.empty()) emit_counter(track_uuid(TrackKind::process_bytes, pid_), process_bins);
    for (const auto& [gpu, bins] : gpu_bins_) emit_counter(track_uuid(TrackKind::gpu_bytes, gpu_track_index(pid_, gpu)), bins);
    flush();
  }

 private:
  size_t begin_event(int64_t ts, uint64_t type, uint64_t track) {
    packet_ = w_.begin(kPacket);
    w_.u64(kTimestamp, static_cast<uint64_t>(ts));
    w_.u64(kSequenceId, seq_);
    size_t te = w_.begin(kTrackEvent);
    w_.u64(kTeType, type);
    w_.u64(kTeTrack, track);
    return te;
  }
  void end_event(size_t te) {
    w_.end(te);
    w_.end(packet_);
    if (w_.size() >= (1u << 20)) flush();
  }
  size_t bin_of(int64_t ts) const {
    int64_t b = (ts - m_.start_ns) / out_->bin_ns();
    return static_cast<size_t>(std::clamp<int64_t>(b, 0, static_cast<int64_t>(bins_) - 1));
  }
  void count_bytes(int64_t qp, int64_t ts, uint64_t bytes) {
    std::vector<uint64_t>& bins = qp_bins_[static_cast<size_t>(qp) - first_qp_];
    if (bins.empty()) bins.assign(bins_, 0);
    bins[bin_of(ts)] += bytes;
  }
  void emit_counter(uint64_t track, const std::vector<uint64_t>& bins) {
    // A value where it changes (the counter holds until the next one), and 0 after the last bin.
    double scale = 1e9 / static_cast<double>(out_->bin_ns());
    bool have = false;
    uint64_t last = 0;
    for (size_t b = 0; b <= bins.size(); ++b) {
      uint64_t v = b < bins.size() ? bins[b] : 0;
      if (have && v == last) continue;
      size_t te = begin_event(m_.start_ns + static_cast<int64_t>(b) * out_->bin_ns(), kCounter, track);
      w_.dbl(kTeDoubleValue, static_cast<double>(v) * scale);
      end_event(te);
      have = true, last = v;
    }
  }
  void flush() {
    if (!w_.size()) return;
    out_->append(w_.buffer());
    w_.clear();
  }

  PerfettoExport* out_;
  const ExperimentModel& m_;
  uint32_t pid_;
  uint64_t seq_;
  ProtoWriter w_;
  size_t packet_ = 0;
  size_t first_qp_ = 0, bins_ = 1;
  std::vector<std::vector<uint64_t>> qp_bins_, qp_doorbell_bins_;
  std::map<int64_t, std::vector<uint64_t>> gpu_bins_;  // bytes of recovered operations, per GPU
};

}  // namespace

PerfettoExport::~PerfettoExport() {
  if (f_) {
    fclose(f_);
    std::remove(tmp_path_.c_str());
  }
}

bool PerfettoExport::open(const std::string& path, const ExperimentModel& m, std::string* error) {
  model_ = &m;
  path_ = path;
  tmp_path_ = path + ".tmp";
  f_ = fopen(tmp_path_.c_str(), "wb");
  if (!f_) {
    *error = "cannot create " + tmp_path_;
    return false;
  }
  bin_ns_ = nice_bin(m.end_ns - m.start_ns);
  ProtoWriter w;
  for (size_t h = 0; h < m.hosts.size(); ++h)
    descriptor(&w, track_uuid(TrackKind::host, h), 0, "host " + m.hosts[h], "", static_cast<int64_t>(h), false);
  for (const ProcessRow& p : m.processes) {
    std::string exe = p.file->meta_value("executable");
    exe = exe.substr(exe.find_last_of('/') + 1);
    descriptor(&w, track_uuid(TrackKind::process, p.process_id), track_uuid(TrackKind::host, p.host_id),
               process_label(p) + " " + exe + " pid " + std::to_string(p.pid),
               "host " + p.host + ", pid " + std::to_string(p.pid) + ", mode " + p.mode, p.process_id, false);
    descriptor(&w, track_uuid(TrackKind::process_bytes, p.process_id), track_uuid(TrackKind::process, p.process_id),
               "bytes/s " + process_label(p), "bytes posted per second by this process (all QPs)", -1, true);
  }
  for (const ThreadRow& t : m.threads)
    descriptor(&w, track_uuid(TrackKind::thread, t.thread_id), track_uuid(TrackKind::process, t.process_id),
               (t.name.empty() ? std::string("thread") : t.name) + " tid " + std::to_string(t.tid), "", t.thread_id, false);
  for (const QpRow& q : m.qps) {
    std::string name = "QP " + std::to_string(q.qp_num) + " " + qp_type_name(q.qp_type);
    if (q.device_id != kNone) name += " " + m.devices[static_cast<size_t>(q.device_id)].name;
    if (q.remote_qp_id != kNone) {
      const QpRow& r = m.qps[static_cast<size_t>(q.remote_qp_id)];
      name += " -> " + process_label(m.processes[r.process_id]) + " QP " + std::to_string(r.qp_num);
    }
    uint64_t parent = track_uuid(TrackKind::process, q.process_id);
    descriptor(&w, track_uuid(TrackKind::qp, q.qp_id), parent, name, "work requests and completions of this QP",
               1000000 + q.qp_id, false);
    descriptor(&w, track_uuid(TrackKind::qp_bytes, q.qp_id), parent, "bytes/s QP " + std::to_string(q.qp_num),
               "bytes posted per second on this QP", 2000000 + q.qp_id, true);
  }
  // GPU-initiated work: a doorbell track and a kernel-launch track per (process, GPU) that has a
  // GPU-initiated QP or launched kernels; a doorbells/s counter per GPU-initiated QP.
  std::set<std::pair<uint32_t, int64_t>>& gpus = gpu_tracks_;
  for (const QpRow& q : m.qps) {
    if (!q.gpu_initiated) continue;
    gpus.insert({q.process_id, q.gpu});
    descriptor(&w, track_uuid(TrackKind::qp_doorbells, q.qp_id), track_uuid(TrackKind::process, q.process_id),
               "doorbells/s QP " + std::to_string(q.qp_num), "doorbells per second its GPU rang on this QP", 3000000 + q.qp_id, true,
               "doorbells/s");
  }
  for (const ProcessRow& p : m.processes)
    if (p.file->events_by_type.count("cuda_launch")) gpus.insert({p.process_id, -1});
  for (const auto& [pid, gpu] : gpus) {
    const std::string g = gpu >= 0 ? "GPU " + std::to_string(gpu) : "GPU (host-memory queues)";
    descriptor(&w, track_uuid(TrackKind::gpu_doorbells, gpu_track_index(pid, gpu)), track_uuid(TrackKind::process, pid), g + " doorbells",
               "doorbells this process's GPU threads rang, as the profiler's poller saw them", 500000 + static_cast<int64_t>(gpu_track_index(pid, gpu)),
               false);
    descriptor(&w, track_uuid(TrackKind::gpu_kernels, gpu_track_index(pid, gpu)), track_uuid(TrackKind::process, pid), g + " kernel launches",
               "kernel launches (at the launch call)", 600000 + static_cast<int64_t>(gpu_track_index(pid, gpu)), false);
    descriptor(&w, track_uuid(TrackKind::gpu_bytes, gpu_track_index(pid, gpu)), track_uuid(TrackKind::process, pid), "bytes/s " + g,
               "bytes per second of the operations recovered from this GPU's send queues (SIGMATRACE_DOORBELLS=wqe)",
               700000 + static_cast<int64_t>(gpu_track_index(pid, gpu)), true);
  }
  append(w.buffer());
  if (!ok_) *error = "cannot write " + tmp_path_;
  return ok_;
}

std::unique_ptr<FileSink> PerfettoExport::open_file(uint32_t process_id) {
  return std::make_unique<PerfettoFileSink>(this, process_id);
}

void PerfettoExport::append(const std::string& bytes) {
  std::lock_guard<std::mutex> g(mu_);
  if (fwrite(bytes.data(), 1, bytes.size(), f_) != bytes.size()) ok_ = false;
}

bool PerfettoExport::finish(std::string* error) {
  ok_ &= fclose(f_) == 0;
  f_ = nullptr;
  if (!ok_) {
    *error = "cannot write " + tmp_path_;
    std::remove(tmp_path_.c_str());
    return false;
  }
  if (std::rename(tmp_path_.c_str(), path_.c_str()) != 0) {
    *error = "cannot rename " + tmp_path_ + " to " + path_;
    return false;
  }
  return true;
}

}  // namespace sigmatrace::exporter

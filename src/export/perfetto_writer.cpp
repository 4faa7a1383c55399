// See perfetto_writer.h: the events of each file (the pass's records), on lanes where they overlap,
// and the output file itself. The descriptors written before the pass: perfetto_tracks.cpp.
#include "export/perfetto_writer.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <functional>
#include <map>
#include <queue>
#include <unordered_map>
#include <set>
#include <vector>

#include "analysis/aggregates.h"
#include "analysis/flow_ids.h"
#include "analysis/ibv_names.h"
#include "export/perfetto_sequence.h"
#include "export/perfetto_wire.h"

namespace sigmatrace::exporter {

using namespace sigmatrace::analysis;
using namespace pftrace;

namespace {

// Slices of one group (a QP's sends or receives, a process's UCX operations, a GPU's kernels) that
// may overlap: each goes to a lane where the previous slice ended strictly before it starts, so
// that begin/end pairs on one track always nest. The lane ended earliest is reused first.
class Lanes {
 public:
  // The lane for [start, end]; -1 when all kLaneBits lanes are busy.
  int64_t place(int64_t start, int64_t end) {
    if (!free_.empty() && free_.top().first < start) {
      uint32_t lane = free_.top().second;
      free_.pop();
      free_.push({end, lane});
      return lane;
    }
    if (count_ >= (1u << kLaneBits)) return -1;
    free_.push({end, count_});
    return count_++;
  }
  uint32_t count() const { return count_; }

 private:
  std::priority_queue<std::pair<int64_t, uint32_t>, std::vector<std::pair<int64_t, uint32_t>>, std::greater<>> free_;
  uint32_t count_ = 0;
};

class PerfettoFileSink : public FileSink {
 public:
  PerfettoFileSink(PerfettoExport* out, uint32_t process_id)
      : out_(out), m_(out->model()), pid_(process_id),
        w_(process_id + 1, out->origin_ns(), out->compress(), [out](std::string_view b) { out->append(b); }),
        sel_(out->selection()),
        summarising_(out->selection().detail_end_ns < out->model().end_ns) {
    first_qp_ = m_.qps.size();
    size_t last = 0;
    for (const auto& [num, ids] : m_.processes[pid_].qps_by_num)
      for (uint32_t id : ids) first_qp_ = std::min<size_t>(first_qp_, id), last = std::max<size_t>(last, id + 1);
    if (first_qp_ > last) first_qp_ = last = 0;
    qp_bins_.resize(last - first_qp_);
    qp_doorbell_bins_.resize(last - first_qp_);
    bins_ = static_cast<size_t>((m_.end_ns - m_.start_ns) / out_->bin_ns()) + 1;
  }
  ~PerfettoFileSink() override { w_.flush(); }

  void call(const CallRecord& r) override {
    if (!keep(r.ts_ns, call_layer_bit(r.name))) return;
    const uint64_t track = thread_track(r.thread_id);
    const bool slice = r.dur_ns > 0;
    w_.begin_event(r.ts_ns, slice ? kSliceBegin : kInstant, track);
    w_.name(r.name);
    w_.category("ibv");
    if (r.qp_id >= 0) w_.annotation("qp_num", m_.qps[static_cast<size_t>(r.qp_id)].qp_num);
    if (r.count) w_.annotation("count", r.count);
    if (r.bytes) w_.annotation("bytes", r.bytes);
    if (r.result) w_.annotation_int("result", r.result);
    w_.end_event();
    if (slice) slice_end(r.ts_ns + r.dur_ns, track);
  }

  // Bytes are counted when posted; the operation is drawn when final (op), with its duration.
  void work_request(const OpRecord& r) override {
    if (r.qp_id >= 0 && r.op_class != kOpRecv) count_bytes(r.qp_id, r.ts_ns, r.bytes);
  }

  void op(const OpRecord& r) override {
    if (summarising_) count_op(r.ts_ns);
    if (!keep(r.ts_ns, timeline_layer_bit(r.layer))) return;
    const bool receive = r.op_class == kOpRecv;
    uint64_t group;
    if (r.qp_id >= 0) group = track_uuid(receive ? TrackKind::recv_lane : TrackKind::send_lane, lane_index(static_cast<uint64_t>(r.qp_id), 0));
    else group = track_uuid(TrackKind::layer_lane, lane_index(uint64_t{pid_} * kLayerCount + layer_index(r.layer), 0));
    bool slice = r.dur_ns > 0;
    int64_t lane = slice ? lanes_[group].place(r.ts_ns, r.ts_ns + r.dur_ns) : 0;
    if (lane < 0) ++lanes_full_, lane = 0, slice = false;
    if (!slice) lanes_[group];  // an instant still needs lane 0 described
    const uint64_t track = lane_track(group, static_cast<uint32_t>(lane));
    w_.begin_event(r.ts_ns, slice ? kSliceBegin : kInstant, track);
    w_.name(op_class_name(r.op_class));
    w_.category(std::string_view(r.layer) != "ibv" ? r.layer : r.is_call ? "ibv.call" : "ibv.wr");
    w_.annotation("bytes", r.bytes);
    if (r.is_call) w_.annotation("wr_count", r.wr_count);
    else w_.annotation("wr_id", r.wr_id);
    if (!receive && !r.is_call && !r.signaled) w_.annotation("signaled", uint64_t{0});
    if (r.status > 0 || (r.status < 0 && r.dur_ns >= 0)) w_.annotation_int("status", r.status);
    if (r.peer_process_id >= 0) w_.annotation_text("peer", peer_label(r.peer_process_id));
    if (r.nccl_task >= 0) w_.annotation_text("nccl", m_.processes[pid_].nccl_tasks[static_cast<size_t>(r.nccl_task)].label());
    if (r.range_id >= 0) {  // its NVTX range, by path (interned: a range's operations share it)
      const std::vector<RangeRow>& ranges = m_.processes[pid_].ranges.rows();
      const auto index = static_cast<size_t>(ProcessRanges::index(r.range_id));
      if (index < ranges.size()) w_.annotation_text("nvtx", ranges[index].path);
    }
    if (r.flow_id && !receive) w_.flow(r.flow_id);
    if (r.completion_id >= 0 && r.dur_ns >= 0) w_.flow(completion_flow_id(r.op_id));
    w_.end_event();
    if (slice) slice_end(r.ts_ns + r.dur_ns, track);
  }

  void completion(const CompletionRecord& r) override {
    if (!keep(r.ts_ns, r.qp_id >= 0 ? unsigned{kLayerIbv} : unsigned{kLayerUcx | kLayerOfi})) return;
    uint64_t track = r.qp_id >= 0 ? track_uuid(TrackKind::completions, static_cast<uint64_t>(r.qp_id)) : thread_track(r.thread_id);
    if (r.qp_id >= 0) completion_qps_.insert(static_cast<uint64_t>(r.qp_id));
    w_.begin_event(r.ts_ns, kInstant, track);
    w_.name(completion_name(r));
    w_.category(r.status == 0 ? "ibv.wc" : "ibv.wc,error");
    if (r.qp_id >= 0) w_.annotation("wr_id", r.wr_id);
    w_.annotation("byte_len", r.byte_len);
    if (r.flow_id) end_flow(r.flow_id);
    if (r.op_id >= 0) end_flow(completion_flow_id(static_cast<uint64_t>(r.op_id)));
    w_.end_event();
  }

  void error(const ErrorRecord& r) override {
    if (!keep(r.ts_ns, timeline_layer_bit(r.layer))) return;
    if (r.kind == "completion") return;  // already an instant on the QP track
    w_.begin_event(r.ts_ns, kInstant, thread_track(r.thread_id));
    w_.name("error " + r.what);
    w_.category("error");
    w_.annotation_int("error", r.error);
    w_.annotation("object", r.object);
    w_.end_event();
  }

  void mark(const MarkRecord& r) override {
    if (!keep(r.ts_ns, kAllLayers)) return;
    w_.begin_event(r.ts_ns, kInstant, thread_track(r.thread_id));
    w_.name("mark " + std::to_string(r.id));
    w_.annotation("value", r.value);
    w_.end_event();
  }

  void doorbell(const DoorbellRecord& r) override {
    if (r.qp_id >= 0) {
      std::vector<uint64_t>& bins = qp_doorbell_bins_[static_cast<size_t>(r.qp_id) - first_qp_];
      if (bins.empty()) bins.assign(bins_, 0);
      bins[bin_of(r.ts_ns)] += 1;
    }
    if (!keep(r.ts_ns, kLayerGpu)) return;
    w_.begin_event(r.ts_ns, kInstant, track_uuid(TrackKind::gpu_doorbells, gpu_track_index(pid_, r.gpu)));
    static const char* const kNames[2][3] = {{"doorbell", "data doorbell", "control doorbell"},
                                             {"BlueFlame doorbell", "BlueFlame data doorbell", "BlueFlame control doorbell"}};
    w_.name(kNames[r.blueflame ? 1 : 0][r.wqe_class <= 2 ? r.wqe_class : 0]);
    w_.category("gpu.doorbell");
    w_.annotation("qp_num", r.qp_num);
    w_.annotation("producer_index", r.producer_index);
    w_.annotation("delta", r.delta);
    if (r.wqe_class) w_.annotation("wqes", r.wqes);
    if (r.kernel) w_.annotation_text("kernel", *r.kernel);
    if (r.qp_id >= 0) {
      const QpRow& q = m_.qps[static_cast<size_t>(r.qp_id)];
      if (q.remote_qp_id != kNone) w_.annotation_text("peer", peer_label(m_.qps[static_cast<size_t>(q.remote_qp_id)].process_id));
    }
    w_.end_event();
  }

  void gpu_op(const OpRecord& r, const GpuWqeRecord& w) override {
    if (r.qp_id >= 0 && r.op_class != kOpNop) count_bytes(r.qp_id, r.ts_ns, r.bytes);
    if (out_->has_gpu_track(pid_, w.gpu)) {
      std::vector<uint64_t>& bins = gpu_bins_[w.gpu];
      if (bins.empty()) bins.assign(bins_, 0);
      bins[bin_of(r.ts_ns)] += r.bytes;
    }
    if (summarising_) count_op(r.ts_ns);
    if (!keep(r.ts_ns, kLayerGpu)) return;
    // No completion of its own in the trace: an instant on its QP's send queue (lane 0).
    uint64_t track = thread_track(-1);
    if (r.qp_id >= 0) {
      track = track_uuid(TrackKind::send_lane, lane_index(static_cast<uint64_t>(r.qp_id), 0));
      lanes_[track];
    }
    w_.begin_event(r.ts_ns, kInstant, track);
    w_.name(op_class_name(r.op_class));
    w_.category("gpu.wqe");
    w_.annotation("bytes", r.bytes);
    w_.annotation("wqe_index", w.wqe_index);
    if (w.rkey) w_.annotation_hex("remote_addr", w.remote_addr), w_.annotation("rkey", w.rkey);
    if (w.inline_data) w_.annotation("inline", uint64_t{1});
    if (r.op_class == kOpAtomicFa || r.op_class == kOpAtomicCs) w_.annotation("operand", w.swap_add);
    if (w.kernel) w_.annotation_text("kernel", *w.kernel);
    if (r.peer_process_id >= 0) w_.annotation_text("peer", peer_label(r.peer_process_id));
    w_.end_event();
  }

  void launch(const LaunchRecord& r) override {
    if (!keep(r.ts_ns, kLayerGpu)) return;
    const int64_t gpu = out_->has_gpu_track(pid_, r.gpu) ? r.gpu : -1;
    w_.begin_event(r.ts_ns, kInstant, track_uuid(TrackKind::gpu_kernels, gpu_track_index(pid_, gpu)));
    w_.name(r.name ? "launch " + *r.name : std::string("launch"));
    w_.category("gpu.launch");
    w_.annotation_text("grid", std::to_string(r.grid[0]) + "x" + std::to_string(r.grid[1]) + "x" + std::to_string(r.grid[2]));
    w_.annotation_text("block", std::to_string(r.block[0]) + "x" + std::to_string(r.block[1]) + "x" + std::to_string(r.block[2]));
    w_.annotation("stream", r.stream);
    if (r.result) w_.annotation_int("result", r.result);
    if (gpu != r.gpu) w_.annotation_int("device", r.gpu);
    w_.end_event();
  }

  void finish() override {
    kernel_slices();
    nccl_slices();
    for (size_t i = 0; i < qp_doorbell_bins_.size(); ++i)
      if (!qp_doorbell_bins_[i].empty()) emit_counter(track_uuid(TrackKind::qp_doorbells, first_qp_ + i), qp_doorbell_bins_[i]);
    // Bytes/s counters: per QP, then the process's sum (and its share of its host's).
    std::vector<uint64_t> process_bins;
    for (size_t i = 0; i < qp_bins_.size(); ++i) {
      if (qp_bins_[i].empty()) continue;
      if (process_bins.empty()) process_bins.assign(bins_, 0);
      for (size_t b = 0; b < bins_; ++b) process_bins[b] += qp_bins_[i][b];
      emit_counter(track_uuid(TrackKind::qp_bytes, first_qp_ + i), qp_bins_[i]);
    }
    if (!process_bins.empty()) {
      emit_counter(track_uuid(TrackKind::process_bytes, pid_), process_bins);
      out_->add_host_bytes(m_.processes[pid_].host_id, process_bins);
    }
    for (const auto& [gpu, bins] : gpu_bins_) emit_counter(track_uuid(TrackKind::gpu_bytes, gpu_track_index(pid_, gpu)), bins);
    if (summarising_) mark_detail_end();
    describe_lanes();
    w_.flush();
    out_->add_left_out(left_out_, summarised_);
  }

 private:
  uint64_t thread_track(int64_t thread_id) const {
    return thread_id >= 0 ? track_uuid(TrackKind::thread, static_cast<uint64_t>(thread_id)) : track_uuid(TrackKind::process, pid_);
  }

  // NVTX ranges under their thread, one lane per nesting level (start/end ranges that overlap
  // take further lanes); marks as instants on the first lane. A range's operations name it
  // (range_id), and its path is its annotation.
  void range(const RangeRow& r) override {
    if (r.thread_id < 0 || !keep(r.start_ns, kAllLayers)) return;
    const uint64_t group = track_uuid(TrackKind::nvtx_lane, lane_index(static_cast<uint64_t>(r.thread_id), 0));
    const bool mark = r.kind == static_cast<uint64_t>(format::NvtxKind::mark);
    int64_t lane = mark ? 0 : lanes_[group].place(r.start_ns, r.end_ns);
    if (mark) lanes_[group];
    if (lane < 0) ++lanes_full_, lane = 0;
    const uint64_t track = lane_track(group, static_cast<uint32_t>(lane));
    const bool slice = !mark && lane >= 0 && r.end_ns > r.start_ns;
    w_.begin_event(r.start_ns, slice ? kSliceBegin : kInstant, track);
    w_.name(r.name.empty() ? std::string_view("(unnamed range)") : std::string_view(r.name));
    w_.category(r.domain.empty() ? std::string_view("nvtx") : std::string_view(r.domain));
    w_.annotation("range_id", r.range_id);
    w_.annotation_text("path", r.path);
    if (!r.payload.empty()) w_.annotation_text("payload", r.payload);
    if (!r.category_name.empty()) w_.annotation_text("category", r.category_name);
    if (!r.ended) w_.annotation("ended", uint64_t{0});
    w_.end_event();
    if (slice) slice_end(r.end_ns, track);
  }

  // Kernels' run times on their GPU (where the profiler saw them end), as slices on lanes.
  void kernel_slices() {
    const ProcessRow& p = m_.processes[pid_];
    for (const auto& [gpu, spans] : p.spans_on) {
      const int64_t g = out_->has_gpu_track(pid_, gpu) ? gpu : -1;
      const uint64_t group = track_uuid(TrackKind::kernel_lane, lane_index(gpu_track_index(pid_, g), 0));
      for (const ProcessRow::Span& sp : spans) {
        const int64_t start = p.clock.to_ns(sp.start_tsc), end = p.clock.to_ns(sp.end_tsc);
        if (end <= start || !keep(start, kLayerGpu)) continue;
        const int64_t lane = lanes_[group].place(start, end);
        if (lane < 0) {
          ++lanes_full_;
          continue;
        }
        const uint64_t track = lane_track(group, static_cast<uint32_t>(lane));
        w_.begin_event(start, kSliceBegin, track);
        auto name = p.kernel_names.find(sp.function);
        w_.name(name != p.kernel_names.end() ? std::string_view(name->second) : std::string_view("kernel"));
        w_.category("gpu.kernel");
        w_.end_event();
        slice_end(end, track);
      }
    }
  }

  // Each NCCL task's network part as a slice: from its first work request's post to its last
  // completion (nccl_tasks.h; the ibv associator, which finished before this sink, keeps them in
  // the process's aggregates), named as the call ("ncclAllReduce #37").
  void nccl_slices() {
    const std::vector<NcclTaskRow>& tasks = m_.processes[pid_].nccl_tasks;
    const std::vector<NcclTaskTraffic>& traffic = out_->aggregates().process[pid_].nccl_traffic;
    const uint64_t group = track_uuid(TrackKind::nccl_lane, lane_index(pid_, 0));
    for (size_t i = 0; i < tasks.size() && i < traffic.size(); ++i) {
      const NcclTaskTraffic& s = traffic[i];
      if (s.first_post_ns < 0 || !keep(s.first_post_ns, kLayerIbv)) continue;
      const NcclTaskRow& t = tasks[i];
      const int64_t end = std::max(s.last_done_ns, s.first_post_ns + 1);
      int64_t lane = lanes_[group].place(s.first_post_ns, end);
      if (lane < 0) ++lanes_full_, lane = 0;
      const uint64_t track = lane_track(group, static_cast<uint32_t>(lane));
      w_.begin_event(s.first_post_ns, kSliceBegin, track);
      w_.name(t.label());
      w_.category("nccl");
      w_.annotation("bytes", t.bytes());
      w_.annotation("wrs", s.wrs);
      w_.annotation("wire_bytes", s.wire_bytes);
      if (t.algorithm_bytes() >= 0) w_.annotation("algorithm_bytes", static_cast<uint64_t>(t.algorithm_bytes()));
      if (!t.algorithm.empty()) w_.annotation_text("algorithm", t.algorithm + "/" + t.protocol);
      w_.annotation_text("datatype", t.datatype);
      w_.end_event();
      slice_end(end, track);
    }
  }

  // The lanes this file used, under their QP (process, GPU) track.
  void describe_lanes() {
    for (const auto& [group, lanes] : lanes_) {
      const TrackKind kind = track_kind(group);
      const uint64_t g = lane_group(track_index(group));
      Track t;
      t.merge_by_name = true;
      switch (kind) {
        case TrackKind::send_lane:
        case TrackKind::recv_lane:
          t.parent = track_uuid(TrackKind::qp, g);
          t.name = kind == TrackKind::send_lane ? "send queue" : "receive queue";
          t.description = kind == TrackKind::send_lane ? "send work requests of this QP, from post to completion"
                                                       : "receive work requests of this QP, from post to completion";
          t.rank = kind == TrackKind::send_lane ? 0 : 1;
          break;
        case TrackKind::layer_lane:
          t.parent = track_uuid(TrackKind::process, pid_);
          t.name = g % kLayerCount == 2 ? "UCX operations" : g % kLayerCount == 3 ? "libfabric operations" : "operations";
          t.description = "operations of this process's layer, from their call to their completion where it was traced";
          t.rank = 400000 + static_cast<int64_t>(g % kLayerCount);
          break;
        case TrackKind::kernel_lane: {
          const int64_t gpu = static_cast<int64_t>(g % 1024) - 1;
          t.parent = track_uuid(TrackKind::process, pid_);
          t.name = gpu >= 0 ? "GPU " + std::to_string(gpu) + " kernels" : "GPU kernels";
          t.description = "kernels while they ran on the GPU (kernels launched on an explicit stream while doorbells were hijacked)";
          t.rank = 650000 + static_cast<int64_t>(g % 1024);
          break;
        }
        case TrackKind::nccl_lane:
          t.parent = track_uuid(TrackKind::process, pid_);
          t.name = "NCCL calls on the network";
          t.description = "each NCCL call's network part: from the first work request posted for it to its last completion";
          t.rank = 300000;
          break;
        case TrackKind::nvtx_lane:
          t.parent = track_uuid(TrackKind::thread, g);
          t.name = "NVTX ranges";
          t.description = "this thread's NVTX ranges (one lane per nesting level) and marks";
          t.rank = -1;
          break;
        default: continue;
      }
      const uint32_t n = std::max<uint32_t>(1, lanes.count());
      for (uint32_t l = 0; l < n; ++l) {
        t.uuid = lane_track(group, l);
        w_.describe(t);
      }
    }
    for (uint64_t qp : completion_qps_) {
      Track t;
      t.uuid = track_uuid(TrackKind::completions, qp);
      t.parent = track_uuid(TrackKind::qp, qp);
      t.name = "completions";
      t.description = "work completions polled from this QP's completion queues";
      t.rank = 2;
      w_.describe(t);
    }
    if (lanes_full_) {
      // Said in the trace itself: more slices in flight at once than lanes.
      w_.begin_event(m_.start_ns, kInstant, track_uuid(TrackKind::process, pid_));
      w_.name("slices drawn as instants (too many in flight)");
      w_.annotation("count", lanes_full_);
      w_.end_event();
    }
  }

  // Whether an event at ts of this layer is drawn; what is not is counted (left out, or after
  // the budget's cut-off: summarised).
  bool keep(int64_t ts, unsigned layer) {
    if (!sel_.in_window(ts) || !(sel_.layers & layer)) return ++left_out_, false;
    if (ts > sel_.detail_end_ns) return ++summarised_, false;
    return true;
  }
  // A flow's last event: with a selection, its first may be left out, and in a shard it may be in
  // another shard's file, so it ends nowhere (an arrow where both ends are in).
  void end_flow(uint64_t id) {
    if (sel_.active || sel_.sharded) w_.flow(id);
    else w_.terminating_flow(id);
  }
  void count_op(int64_t ts) {
    if (op_bins_.empty()) op_bins_.assign(bins_, 0);
    op_bins_[bin_of(ts)] += 1;
  }
  // Where per-operation detail ends: a mark on the process's track saying what follows only as
  // counters, and the operations/s counter that carries on.
  void mark_detail_end() {
    Track c{track_uuid(TrackKind::process_ops, pid_), track_uuid(TrackKind::process, pid_), "operations/s " + process_label(m_.processes[pid_]),
            "operations per second of this process (drawn one by one only before the timeline budget's cut-off)", -2};
    c.counter_unit = "operations/s";
    w_.describe(c);
    if (!op_bins_.empty()) emit_counter(c.uuid, op_bins_);
    w_.begin_event(sel_.detail_end_ns, kInstant, track_uuid(TrackKind::process, pid_));
    w_.name("timeline budget: per-operation detail ends here (counters after it)");
    w_.category("sigmatrace");
    w_.annotation("budget_events", sel_.budget_events);
    w_.annotation("events_summarised", summarised_);
    w_.end_event();
  }

  void slice_end(int64_t ts, uint64_t track) {
    w_.begin_event(ts, kSliceEnd, track);
    w_.end_event();
  }
  // A process's label, built once: it is an interned annotation value on most operations.
  const std::string& peer_label(int64_t process_id) {
    std::string& l = peer_labels_[process_id];
    if (l.empty()) l = process_label(m_.processes[static_cast<size_t>(process_id)]);
    return l;
  }
  std::string_view completion_name(const CompletionRecord& r) {
    const int key = r.status == 0 ? (r.qp_id >= 0 ? static_cast<int>(r.opcode) : -1) : 100000 + static_cast<int>(r.status);
    std::string& n = completion_names_[key];
    if (n.empty())
      n = r.status == 0 ? "completion " + (r.qp_id >= 0 ? wc_opcode_name(r.opcode) : std::string("RECV")) : "completion " + wc_status_name(r.status);
    return n;
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
    write_counter(bins, m_.start_ns, out_->bin_ns(), [&](int64_t ts, double v) { w_.counter(ts, track, v); });
  }

 private:
  PerfettoExport* out_;
  const ExperimentModel& m_;
  uint32_t pid_;
  PacketSequence w_;
  std::unordered_map<int64_t, std::string> peer_labels_;
  std::unordered_map<int, std::string> completion_names_;
  size_t first_qp_ = 0, bins_ = 1;
  std::vector<std::vector<uint64_t>> qp_bins_, qp_doorbell_bins_;
  std::map<int64_t, std::vector<uint64_t>> gpu_bins_;  // bytes of recovered operations, per GPU
  std::map<uint64_t, Lanes> lanes_;                    // by the uuid of the group's lane 0
  std::set<uint64_t> completion_qps_;
  uint64_t lanes_full_ = 0;
  const TimelineSelection& sel_;
  const bool summarising_;  // the budget cuts the timeline: count operations for operations/s
  std::vector<uint64_t> op_bins_;
  uint64_t left_out_ = 0, summarised_ = 0;
};

}  // namespace

PerfettoExport::~PerfettoExport() {
  if (file_.is_open()) {
    std::string ignored;
    file_.close(&ignored);
    std::remove(tmp_path_.c_str());
  }
}

std::unique_ptr<FileSink> PerfettoExport::open_file(uint32_t process_id) {
  if (!selection_.has_process(process_id)) return std::make_unique<FileSink>();  // not in the timeline
  return std::make_unique<PerfettoFileSink>(this, process_id);
}

void PerfettoExport::append(std::string_view bytes) { file_.append(bytes.data(), bytes.size()); }

void PerfettoExport::add_left_out(uint64_t left_out, uint64_t summarised) {
  std::lock_guard<std::mutex> g(mu_);
  left_out_ += left_out, summarised_ += summarised;
}

void PerfettoExport::add_host_bytes(uint32_t host, const std::vector<uint64_t>& bins) {
  std::lock_guard<std::mutex> g(mu_);
  std::vector<uint64_t>& sum = host_bins_[host];
  if (sum.size() < bins.size()) sum.resize(bins.size(), 0);
  for (size_t b = 0; b < bins.size(); ++b) sum[b] += bins[b];
}

bool PerfettoExport::finish(std::string* error) {
  ProtoWriter w;
  // Each host's counter has a sequence of its own, after every process's (sequence ids are
  // process_id + 1), so that shards' files (shards.h), each with its own hosts, concatenate
  // without two of them writing one sequence.
  for (const auto& [host, bins] : host_bins_) {
    const uint64_t seq = model_->processes.size() + 1 + host;
    write_counter(bins, model_->start_ns, bin_ns_, [&](int64_t ts, double v) { counter_packet(&w, seq, ts, track_uuid(TrackKind::host_bytes, host), v); });
  }
  append(w.buffer());
  if (!file_.close(error)) {
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

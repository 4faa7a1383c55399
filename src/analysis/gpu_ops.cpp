// GPU-initiated work in the second pass (layer "gpu"): the doorbells each GPU rang, the
// operations recovered from its send queues (docs/gpu-doorbells.md), the kernels it ran, and the
// doorbell hijack's set-up, of one file. Each recovered WQE becomes an op row with the doorbell
// that announced it, its GPU, the kernel running, and its peer — the peer QP's process from the
// QP topology, or else the process that registered the memory its rkey names. Integrity counts
// (recovered, lost, damaged, unread WQEs) go to the QP's DoorbellCounters.
#include <algorithm>
#include <unordered_map>

#include "analysis/associator_list.h"
#include "analysis/ibv_names.h"
#include "format/event_types.h"

namespace sigmatrace::analysis {

using format::EventType;

namespace {

class GpuAssociation final : public LayerAssociator {
 public:
  explicit GpuAssociation(FileContext& f) : f_(f) {}
  void on_event(int64_t thread, int64_t ts, const format::DecodedEvent& ev) override;  // gpu_*, cuda_* and devx_* events
  void on_aggregate(const format::DecodedEvent& ev) override;                          // the GPU keys' entries

 private:
  void doorbell(int64_t ts, const format::DecodedEvent& ev);
  void wqe(int64_t ts, const format::DecodedEvent& ev);
  void wqe_stats(const format::DecodedEvent& ev);
  void launch(int64_t thread, int64_t ts, const format::DecodedEvent& ev);
  void control(int64_t thread, int64_t ts, const format::DecodedEvent& ev);
  void call(int64_t thread, int64_t ts, const char* name, int64_t qp, int64_t result);
  DoorbellCounters& doorbell_counters(int64_t qp);
  int64_t peer_of(int64_t qp, uint64_t rkey, uint64_t raddr);
  int64_t dc_target_process(uint64_t dct, uint64_t rlid);

  // The first hang dump of the QP's process and of its peer's (ns; -1: none).
  struct DumpTimes {
    int64_t own = -1, peer = -1;
  };
  const DumpTimes& dump_times(int64_t qp);

  FileContext& f_;
  uint64_t doorbell_seq_ = 0, launch_seq_ = 0;
  std::unordered_map<int64_t, DumpTimes> dump_times_;    // per QP
  std::unordered_map<int64_t, uint64_t> last_doorbell_;  // per QP: the doorbell its next WQEs belong to
  std::unordered_map<uint64_t, int64_t> peer_by_rkey_;   // rkey -> process that registered it (or kNone)
  std::unordered_map<uint64_t, int64_t> dct_owner_;      // (rlid << 32 | DCT number) -> its process (or kNone)
};

const GpuAssociation::DumpTimes& GpuAssociation::dump_times(int64_t qp) {
  auto [it, fresh] = dump_times_.try_emplace(qp);
  if (!fresh) return it->second;
  it->second.own = f_.process.first_hang_dump_ns();
  const QpRow& q = f_.model.qps[static_cast<size_t>(qp)];
  if (q.remote_qp_id != kNone) {
    const QpRow& r = f_.model.qps[static_cast<size_t>(q.remote_qp_id)];
    it->second.peer = f_.model.processes[r.process_id].first_hang_dump_ns();
  }
  return it->second;
}

DoorbellCounters& GpuAssociation::doorbell_counters(int64_t qp) {
  return qp == kNone ? f_.counters.doorbells_without_qp : f_.agg.qp_doorbells[static_cast<size_t>(qp)];
}

void GpuAssociation::on_event(int64_t thread, int64_t ts, const format::DecodedEvent& ev) {
  switch (static_cast<EventType>(ev.type)) {
    case EventType::gpu_doorbell: doorbell(ts, ev); return;
    case EventType::gpu_wqe: wqe(ts, ev); return;
    case EventType::gpu_wqe_stats: wqe_stats(ev); return;
    case EventType::cuda_launch: launch(thread, ts, ev); return;
    case EventType::gpu_uar_map: case EventType::gpu_poller: case EventType::devx_qp_create:
    case EventType::devx_qp_modify: case EventType::devx_obj_destroy: case EventType::devx_uar_alloc:
    case EventType::devx_umem_reg: case EventType::devx_cq_create: case EventType::cuda_kernel_markers:
    case EventType::cuda_context_end:
      control(thread, ts, ev);
      return;
    default: return;  // cuda_kernel_end / _seen_end (kernel spans: read in the first pass), lookups, registrations
  }
}

void GpuAssociation::on_aggregate(const format::DecodedEvent& ev) {
  const uint64_t* v = ev.values;  // thread_tid key_kind key_a key_b count bytes
  switch (static_cast<format::AggregateKey>(v[1])) {
    case format::AggregateKey::gpu_doorbell_qp: {
      DoorbellCounters& d = doorbell_counters(f_.qp_of(v[2], 0));
      d.doorbells += v[4];
      d.wqebbs += v[5];
      return;
    }
    case format::AggregateKey::gpu_wqe_qp_opcode: {
      OpCounters& c = f_.op_counters(f_.qp_of(v[2], 0));
      const unsigned op = op_class_of_mlx5_opcode(v[3]);
      c.ops[op] += v[4];
      c.bytes[op] += v[5];
      return;
    }
    case format::AggregateKey::cuda_launch: f_.counters.hijack.launches += v[4]; return;
    default: return;
  }
}

void GpuAssociation::doorbell(int64_t ts, const format::DecodedEvent& ev) {
  const uint64_t* v = ev.values;  // uar_page qp_num producer_index delta kind wqe_class wqes
  DoorbellRecord d;
  d.doorbell_id = f_.process_scoped_id(&doorbell_seq_);
  d.ts_ns = ts;
  d.process_id = f_.process.process_id;
  d.qp_num = v[1], d.producer_index = v[2], d.delta = v[3], d.uar_page = v[0];
  d.blueflame = v[4] == static_cast<uint64_t>(format::DoorbellKind::blueflame);
  d.from_record = v[4] == static_cast<uint64_t>(format::DoorbellKind::from_record);
  d.wqe_class = v[5], d.wqes = v[6];
  d.qp_id = f_.qp_of(v[1], ev.tsc);
  if (d.qp_id != kNone) d.gpu = f_.model.qps[static_cast<size_t>(d.qp_id)].gpu;
  const ProcessRow::KernelHit hit = f_.process.kernel_hit_at(ev.tsc, d.gpu);
  d.kernel = f_.process.kernel_name(hit);
  d.range_id = f_.process.ranges.id(f_.process.launch_range(hit));
  DoorbellCounters& c = doorbell_counters(d.qp_id);
  c.doorbells += 1;
  c.wqebbs += d.delta;
  c.blueflame += d.blueflame;
  c.from_record += d.from_record;
  c.data_doorbells += d.wqe_class == static_cast<uint64_t>(format::DoorbellWqeClass::data);
  c.control_doorbells += d.wqe_class == static_cast<uint64_t>(format::DoorbellWqeClass::control);
  c.not_read_doorbells += d.wqe_class == static_cast<uint64_t>(format::DoorbellWqeClass::not_read);
  c.saw(ts);
  if (d.qp_id != kNone) {
    const DumpTimes& t = dump_times(d.qp_id);
    // (Pollers write several QPs' doorbells out of time order: the latest wins, not the last read.)
    if (t.own >= 0 && ts <= t.own) {
      c.wqebbs_before_own_dump += d.delta;
      if (ts >= c.last_before_own_dump_ns) c.last_before_own_dump_ns = ts, c.producer_index_at_own_dump = d.producer_index;
    }
    if (t.peer >= 0 && ts <= t.peer) c.last_before_peer_dump_ns = std::max(c.last_before_peer_dump_ns, ts);
  }
  last_doorbell_[d.qp_id] = d.doorbell_id;  // a poller records a doorbell right before its WQEs
  if (f_.sink) f_.sink->doorbell(d);
}

int64_t GpuAssociation::peer_of(int64_t qp, uint64_t rkey, uint64_t raddr) {
  if (qp != kNone) {
    const QpRow& q = f_.model.qps[static_cast<size_t>(qp)];
    if (q.remote_qp_id != kNone) return f_.model.qps[static_cast<size_t>(q.remote_qp_id)].process_id;
  }
  if (!rkey) return kNone;
  auto it = peer_by_rkey_.find(rkey);
  if (it != peer_by_rkey_.end()) return it->second;
  // An unpaired QP: the process (other than this one) that registered memory with that rkey
  // around the address. Keys are per device, so only a unique answer counts.
  int64_t found = kNone;
  for (const MrRow& r : f_.model.mrs)
    if (r.rkey == rkey && r.process_id != f_.process.process_id && raddr >= r.addr && raddr - r.addr < r.length) {
      if (found != kNone && found != r.process_id) {
        found = kNone;
        break;
      }
      found = r.process_id;
    }
  return peer_by_rkey_[rkey] = found;
}

// A DC initiator's WQE names its target by the target port's LID and the DCT's number: the
// process that created that DCT (a QP of that number on a device with that LID).
int64_t GpuAssociation::dc_target_process(uint64_t dct, uint64_t rlid) {
  const uint64_t key = (rlid << 32) | dct;
  auto it = dct_owner_.find(key);
  if (it != dct_owner_.end()) return it->second;
  int64_t found = kNone;
  for (const QpRow& q : f_.model.qps)
    if (q.qp_num == dct && (q.local.lid == rlid || rlid == 0)) {
      found = q.process_id;
      break;
    }
  return dct_owner_[key] = found;
}

void GpuAssociation::wqe(int64_t ts, const format::DecodedEvent& ev) {
  // qp_num wqe_index doorbell_pi opcode opmod ds flags bytes remote_addr rkey local_addr lkey sges
  // inline imm swap_add compare swap_mask compare_mask dct rlid atomic_bytes
  const uint64_t* v = ev.values;
  OpRecord op;
  op.op_id = f_.next_op_id();
  op.ts_ns = ts;
  op.process_id = f_.process.process_id;
  op.layer = "gpu";
  op.qp_id = f_.qp_of(v[0], ev.tsc);
  op.op_class = op_class_of_mlx5_opcode(v[3]);
  op.bytes = v[7];
  op.peer_process_id = v[19] ? dc_target_process(v[19], v[20]) : peer_of(op.qp_id, v[9], v[8]);
  GpuWqeRecord w;
  if (op.qp_id != kNone) w.gpu = f_.model.qps[static_cast<size_t>(op.qp_id)].gpu;
  const ProcessRow::KernelHit hit = f_.process.kernel_hit_at(ev.tsc, w.gpu);
  w.kernel = f_.process.kernel_name(hit);
  w.launch_tsc = hit.found ? hit.launch_tsc : 0;
  op.range_id = f_.process.ranges.id(f_.process.launch_range(hit));
  auto d = last_doorbell_.find(op.qp_id);
  w.doorbell_id = d != last_doorbell_.end() ? static_cast<int64_t>(d->second) : kNone;
  w.wqe_index = v[1], w.opcode = v[3], w.opmod = v[4], w.flags = v[6];
  w.remote_addr = v[8], w.rkey = v[9], w.local_addr = v[10], w.lkey = v[11], w.sges = v[12];
  w.inline_data = v[13] != 0;
  w.imm = v[14], w.swap_add = v[15], w.compare = v[16];
  OpCounters& c = f_.op_counters(op.qp_id);
  c.ops[op.op_class] += 1;
  c.bytes[op.op_class] += op.bytes;
  c.calls += 1;
  c.saw(ts);
  if (v[19] && op.qp_id != kNone && op.peer_process_id != kNone) {  // a DC initiator's: by where it went
    OpCounters& p = f_.agg.qp_by_peer[static_cast<size_t>(op.qp_id)][static_cast<uint32_t>(op.peer_process_id)];
    p.ops[op.op_class] += 1;
    p.bytes[op.op_class] += op.bytes;
  }
  if (f_.sink) f_.sink->gpu_op(op, w);
}

void GpuAssociation::wqe_stats(const format::DecodedEvent& ev) {
  // qp_num uar_page gpu memory recovered wqebbs lost_wqebbs damaged unread_wqebbs index_errors
  // copies batches wait_ns max_wait_ns batch
  const uint64_t* v = ev.values;
  DoorbellCounters& c = doorbell_counters(f_.qp_of(v[0], ev.tsc));
  c.wqes_read = true;
  c.recovered += v[4];
  c.recovered_wqebbs += v[5];
  c.lost_wqebbs += v[6];
  c.damaged += v[7];
  c.unread_wqebbs += v[8];
  c.index_errors += v[9];
  c.batches += v[11];
  c.wait_ns += v[12];
  c.max_wait_ns = std::max(c.max_wait_ns, v[13]);
}

void GpuAssociation::launch(int64_t thread, int64_t ts, const format::DecodedEvent& ev) {
  const uint64_t* v = ev.values;  // function stream device entry grid_xyz block_xyz shared result
  LaunchRecord l;
  l.launch_id = f_.process_scoped_id(&launch_seq_);
  l.ts_ns = ts;
  l.process_id = f_.process.process_id;
  l.thread_id = thread;
  l.gpu = ev.as_i64(2);
  l.function = v[0], l.stream = v[1], l.entry = v[3];
  for (int i = 0; i < 3; ++i) l.grid[i] = v[4 + i], l.block[i] = v[7 + i];
  l.result = ev.as_i64(11);
  auto n = f_.process.kernel_names.find(v[0]);
  l.name = n != f_.process.kernel_names.end() ? &n->second : nullptr;
  ++f_.counters.hijack.launches;
  if (f_.sink) f_.sink->launch(l);
}

void GpuAssociation::call(int64_t thread, int64_t ts, const char* name, int64_t qp, int64_t result) {
  f_.calls.call(CallRecord{ts, 0, f_.process.process_id, thread, name, qp, 0, 0, result});
}

// The doorbell hijack's set-up and its pollers: counted for the summary, slices on their thread.
void GpuAssociation::control(int64_t thread, int64_t ts, const format::DecodedEvent& ev) {
  const uint64_t* v = ev.values;
  HijackCounters& h = f_.counters.hijack;
  switch (static_cast<EventType>(ev.type)) {
    case EventType::gpu_uar_map: {
      const auto outcome = static_cast<format::UarMapOutcome>(v[6]);
      if (outcome == format::UarMapOutcome::hijacked) ++h.pages_hijacked;
      else if (outcome == format::UarMapOutcome::doorbells_off) ++h.pages_doorbells_off;
      else if (outcome == format::UarMapOutcome::hijack_failed) ++h.pages_not_hijacked;
      else ++h.map_failures;
      call(thread, ts, "cuMemHostGetDevicePointer (doorbell page)", kNone, ev.as_i64(7));
      break;
    }
    case EventType::gpu_poller:
      if (v[0] == 1) ++h.pollers;
      if (v[0] == 2) h.poller_doorbells += v[2], h.poller_cpu_ns += v[3], h.poller_wall_ns += v[4];
      break;
    case EventType::devx_qp_create: call(thread, ts, "devx CREATE_QP", v[2] ? f_.qp_of(v[2], ev.tsc) : kNone, int64_t(v[17])); break;
    case EventType::devx_qp_modify: call(thread, ts, "devx QP transition", f_.qp_of(v[1], ev.tsc), int64_t(v[10])); break;
    case EventType::devx_obj_destroy: call(thread, ts, "devx destroy", kNone, ev.as_i64(3)); break;
    case EventType::devx_uar_alloc: call(thread, ts, "mlx5dv_devx_alloc_uar", kNone, ev.as_i64(6)); break;
    case EventType::devx_umem_reg: call(thread, ts, "mlx5dv_devx_umem_reg", kNone, ev.as_i64(8)); break;
    case EventType::devx_cq_create: call(thread, ts, "devx CREATE_CQ", kNone, int64_t(v[10])); break;
    case EventType::cuda_kernel_markers:
      h.kernels_marked += v[0], h.kernel_ends += v[1], h.kernel_markers_dropped += v[2], h.kernel_markers_unresolved += v[3];
      break;
    case EventType::cuda_context_end: {
      static const char* const kHow[] = {"CUDA context ended", "cuCtxDestroy", "cuDevicePrimaryCtxReset",
                                         "primary context released"};
      call(thread, ts, kHow[v[1] <= 3 ? v[1] : 0], kNone, ev.as_i64(5));
      break;
    }
    default: break;
  }
}

std::unique_ptr<LayerAssociator> make_gpu_associator(FileContext& f) { return std::make_unique<GpuAssociation>(f); }

constexpr EventIdRange kGpuEvents[] = {{200, 299}, {500, 599}};  // devx commands; CUDA and the doorbell hijack
constexpr format::AggregateKey kGpuKeys[] = {format::AggregateKey::gpu_doorbell_qp, format::AggregateKey::gpu_wqe_qp_opcode,
                                             format::AggregateKey::cuda_launch};

}  // namespace

extern const AssociatorRegistration kGpuAssociator = {"gpu", kGpuEvents, kGpuKeys, &make_gpu_associator};

}  // namespace sigmatrace::analysis

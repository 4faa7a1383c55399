// See experiment_model.h.
#include "analysis/experiment_model.h"

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <set>
#include <thread>

#include "analysis/layer_ops.h"
#include "analysis/qp_topology.h"
#include "format/event_types.h"
#include "format/experiment_layout.h"

namespace sigmatrace::analysis {

using format::EventType;

const PortRow* DeviceRow::port(uint64_t n) const {
  for (const PortRow& p : ports)
    if (p.port == n) return &p;
  return ports.empty() ? nullptr : &ports.front();
}

uint64_t hw_endpoint_hash(const HwEndpoint& e) {
  // FNV-1a over the words that identify the endpoint; GID wins over LID when present (RoCE has LID 0).
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](uint64_t v) {
    for (int i = 0; i < 8; ++i) h = (h ^ ((v >> (8 * i)) & 0xff)) * 1099511628211ull;
  };
  if (e.has_gid()) mix(e.gid_prefix), mix(e.gid_iface);
  else mix(e.lid);
  mix(e.qp_num);
  return h;
}

std::string gid_text(uint64_t prefix, uint64_t iface) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%04x:%04x:%04x:%04x:%04x:%04x:%04x:%04x", unsigned(prefix >> 48) & 0xffff,
                unsigned(prefix >> 32) & 0xffff, unsigned(prefix >> 16) & 0xffff, unsigned(prefix) & 0xffff,
                unsigned(iface >> 48) & 0xffff, unsigned(iface >> 32) & 0xffff, unsigned(iface >> 16) & 0xffff,
                unsigned(iface) & 0xffff);
  return buf;
}

ProcessRow::KernelHit ProcessRow::kernel_hit_at(uint64_t tsc, int64_t gpu) const {
  if (auto sp = spans_on.find(gpu); sp != spans_on.end()) {
    const std::vector<Span>& v = sp->second;
    auto it = std::upper_bound(v.begin(), v.end(), tsc, [](uint64_t t, const Span& s) { return t < s.start_tsc; });
    for (int steps = 0; it != v.begin() && steps < 64; ++steps) {
      --it;
      if (it->attributable && tsc <= it->end_tsc + span_slack_ticks) return {true, it->function, it->launch_tsc, it->tid};
    }
  }
  auto last_before = [tsc](const std::vector<Launch>& v) -> const Launch* {
    auto it = std::upper_bound(v.begin(), v.end(), tsc, [](uint64_t t, const Launch& l) { return t < l.tsc; });
    return it == v.begin() ? nullptr : &*(it - 1);
  };
  const Launch* l = nullptr;
  if (auto on = launches_on.find(gpu); gpu >= 0 && on != launches_on.end()) l = last_before(on->second);
  if (!l) l = last_before(launches);
  return l ? KernelHit{true, l->function, l->tsc, l->tid} : KernelHit{};
}

int64_t ProcessRow::first_hang_dump_ns() const {
  return file && !file->hang_dumps.empty() ? clock.to_ns(file->hang_dumps.front().tsc) : -1;
}

const std::string* ProcessRow::kernel_at(uint64_t tsc, int64_t gpu) const { return kernel_name(kernel_hit_at(tsc, gpu)); }

const std::string* ProcessRow::kernel_name(const KernelHit& hit) const {
  if (!hit.found) return nullptr;
  auto n = kernel_names.find(hit.function);
  return n == kernel_names.end() ? nullptr : &n->second;
}

int64_t ProcessRow::launch_range(const KernelHit& hit) const {
  if (ranges.rows().empty()) return -1;
  auto t = thread_of_tid.find(hit.tid);
  if (!hit.found || t == thread_of_tid.end()) return -1;
  return ranges.at(t->second, clock.to_ns(hit.launch_tsc));
}

namespace {

// Kernel spans of one process from its launches and the ends the profiler saw (both in tsc).
struct SpanBuilder {
  struct Launched {
    uint64_t tsc, function;
    int64_t device;
    bool end_marked;
    uint32_t tid;
  };
  std::map<uint64_t, std::vector<Launched>> by_stream;             // stream -> launches in time order
  struct End {
    uint64_t end_tsc;   // where the kernel ends (the GPU's time, or the last look that saw it unfinished)
    uint64_t seen_tsc;  // when it was known to have ended (the same for the GPU's time)
  };
  std::map<std::pair<uint64_t, uint64_t>, End> end_of;             // (stream, launch tsc) -> its end
  void build(ProcessRow* p) const {
    for (const auto& [stream, launched] : by_stream) {
      uint64_t prev_end = 0;
      for (const Launched& l : launched) {
        auto e = end_of.find({stream, l.tsc});
        const uint64_t start = std::max(l.tsc, prev_end);
        if (e == end_of.end()) {
          // Marked but its end not reported: still running when the trace ended (a persistent
          // kernel, or the process exited first). Unmarked: nothing is known of when it ran.
          if (l.end_marked) p->spans_on[l.device].push_back({start, ~uint64_t{0} - p->span_slack_ticks, l.function, l.tsc, l.tid});
          prev_end = l.end_marked ? ~uint64_t{0} : 0;
          continue;
        }
        const End& end = e->second;
        if (end.end_tsc >= start) p->spans_on[l.device].push_back({start, end.end_tsc, l.function, l.tsc, l.tid});
        else if (end.seen_tsc > start) p->spans_on[l.device].push_back({start, end.seen_tsc, l.function, l.tsc, l.tid, false});
        prev_end = std::max(prev_end, end.end_tsc);  // an end taken early (untimed) never moves the stream back
      }
    }
    for (auto& [gpu, v] : p->spans_on)
      std::sort(v.begin(), v.end(), [](const ProcessRow::Span& a, const ProcessRow::Span& b) { return a.start_tsc < b.start_tsc; });
  }
};

}  // namespace

int64_t ExperimentModel::qp_at(uint32_t process_id, uint64_t qp_num, uint64_t tsc) const {
  const auto& m = processes[process_id].qps_by_num;
  auto it = m.find(static_cast<uint32_t>(qp_num));
  if (it == m.end()) return kNone;
  const std::vector<uint32_t>& ids = it->second;
  for (size_t i = ids.size(); i-- > 1;)
    if (qps[ids[i]].create_tsc <= tsc) return ids[i];
  return ids.front();
}

namespace {

// The control-plane events of one file, kept (few) and applied in time order after the scan.
struct ControlEvent {
  uint64_t tsc;
  uint16_t type;
  uint32_t tid;
  uint64_t v[format::kMaxEventFields];
  std::string name;
};

bool is_control(uint16_t type) {
  switch (static_cast<EventType>(type)) {
    case EventType::ibv_device_open: case EventType::ibv_port_info: case EventType::ibv_qp_create:
    case EventType::ibv_qp_destroy: case EventType::ibv_qp_modify: case EventType::ibv_mr_reg:
    case EventType::ibv_mr_dereg: case EventType::devx_qp_create: case EventType::devx_qp_modify:
    case EventType::devx_obj_destroy: case EventType::cuda_function: case EventType::cuda_launch:
    case EventType::cuda_kernel_end: case EventType::cuda_kernel_seen_end:
      return true;
    default: return false;
  }
}

// Fields are read by position: types only ever gain trailing fields, so a file whose type has at
// least the built-in fields can be read with the built-in layout.
bool layout_ok(const format::DecodedEvent& ev) {
  const format::EventSpec* spec = format::find_builtin_spec(ev.type);
  return spec && ev.field_count >= spec->field_count;
}

bool is_nccl_task(uint16_t type) {
  return type == static_cast<uint16_t>(EventType::nccl_comm) || type == static_cast<uint16_t>(EventType::nccl_task);
}
bool is_nvtx(uint16_t type) { return type >= static_cast<uint16_t>(EventType::nvtx_domain) && type <= static_cast<uint16_t>(EventType::nvtx_payload); }

struct FileControl {
  std::vector<ControlEvent> events;
  MessageStampCollector messages;  // message ends, for the host clock correction
  NvtxCollector nvtx;  // ranges are many: folded as they come, not kept as events
  NcclTaskCollector nccl;
  std::vector<LayerControlEvent> layer_events;  // for the UCX/libfabric layer model
};

// True when the files' headers name two hosts or more: only then are there clocks to compare
// (decoding the message ends costs the first pass about a third more on a Full-mode trace).
bool files_span_hosts(const std::vector<std::string>& files) {
  std::string first;
  for (const std::string& path : files) {
    format::TraceFileReader r;
    std::string error;
    if (!r.open(path, &error)) continue;
    std::string host;
    for (const auto& [k, v] : r.metadata())
      if (k == "host") host = v;
    if (first.empty()) first = host;
    else if (host != first) return true;
  }
  return false;
}

long to_long(const std::string& s, long dflt) {
  try {
    return s.empty() ? dflt : std::stol(s);
  } catch (...) {
    return dflt;
  }
}

}  // namespace

ExperimentModel build_experiment_model(const std::string& dir, unsigned threads, std::atomic<uint64_t>* bytes_done, ClockSyncMode clock_sync) {
  ExperimentModel m;
  m.dir = dir;
  std::vector<std::string> files = format::list_trace_files(dir);
  m.scan.dir = dir;
  m.scan.files.resize(files.size());
  std::vector<FileControl> control(files.size());
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads = std::min<unsigned>(threads, static_cast<unsigned>(std::max<size_t>(1, files.size())));
  // Only the control-plane events are decoded in this pass, and the ends of messages for the
  // host clock correction (Full mode's sends and receive completions); the rest is skipped over.
  std::vector<bool> wanted(1024, false);
  const bool stamps = clock_sync != ClockSyncMode::off && files_span_hosts(files);
  for (size_t t = 0; t < wanted.size(); ++t) {
    const auto type = static_cast<uint16_t>(t);
    wanted[t] = is_control(type) || is_layer_control(type) || is_nvtx(type) || is_nccl_task(type) || (stamps && MessageStampCollector::wants(type));
  }
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (unsigned i = 0; i < threads; ++i)
    pool.emplace_back([&] {
      for (size_t k; (k = next.fetch_add(1)) < files.size();) {
        FileControl& fc = control[k];
        ScanHooks hooks;
        hooks.bytes_done = bytes_done;
        hooks.thread_types_wanted = &wanted;
        hooks.on_thread_event = [&fc, stamps](uint32_t tid, const format::DecodedEvent& ev) {
          if (stamps && MessageStampCollector::wants(ev.type) && layout_ok(ev)) fc.messages.on_event(ev);
          if (is_nvtx(ev.type)) {
            if (layout_ok(ev)) fc.nvtx.on_event(tid, ev);
            return;
          }
          if (is_nccl_task(ev.type)) {
            if (layout_ok(ev)) fc.nccl.on_event(tid, ev);
            return;
          }
          if (is_layer_control(ev.type)) {
            LayerControlEvent le;
            le.type = ev.type;
            for (int f = 0; f < ev.field_count; ++f) {
              if (!ev.bytes[f].empty()) le.bytes = std::string(ev.bytes[f]);
              else if (f < 4) le.v[f] = ev.values[f];
            }
            fc.layer_events.push_back(std::move(le));
            return;
          }
          if (!is_control(ev.type) || !layout_ok(ev)) return;
          ControlEvent ce{ev.tsc, ev.type, tid, {}, {}};
          for (int f = 0; f < ev.field_count && f < int(format::kMaxEventFields); ++f) ce.v[f] = ev.values[f];
          if (ev.type == static_cast<uint16_t>(EventType::ibv_device_open)) ce.name = std::string(ev.bytes[2]);
          if (ev.type == static_cast<uint16_t>(EventType::cuda_function)) ce.name = std::string(ev.bytes[1]);
          fc.events.push_back(std::move(ce));
        };
        m.scan.files[k] = scan_trace_file(files[k], &hooks);
      }
    });
  for (std::thread& t : pool) t.join();
  for (const FileSummary& f : m.scan.files)
    if (!f.usable) m.scan.skipped.push_back(f.error);

  // Processes: usable files, ordered by rank (unknown ranks last), host, pid.
  std::vector<size_t> order;
  for (size_t k = 0; k < files.size(); ++k)
    if (m.scan.files[k].usable) order.push_back(k);
  auto key = [&](size_t k) {
    const FileSummary& f = m.scan.files[k];
    long rank = f.rank();
    return std::make_tuple(rank < 0, rank, f.meta_value("host"), to_long(f.meta_value("pid"), 0), f.path);
  };
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return key(a) < key(b); });

  std::vector<const FileSummary*> ordered;
  for (size_t k : order) ordered.push_back(&m.scan.files[k]);
  std::vector<ClockModel> clocks = normalize_clocks(ordered);
  std::set<std::string> hosts;
  for (const FileSummary* f : ordered) hosts.insert(f->meta_value("host"));
  m.hosts.assign(hosts.begin(), hosts.end());

  bool have_span = false;
  for (size_t i = 0; i < order.size(); ++i) {
    const FileSummary& f = m.scan.files[order[i]];
    ProcessRow p;
    p.process_id = static_cast<uint32_t>(i);
    p.file = &f;
    p.host = f.meta_value("host");
    p.host_id = static_cast<uint32_t>(std::lower_bound(m.hosts.begin(), m.hosts.end(), p.host) - m.hosts.begin());
    p.pid = to_long(f.meta_value("pid"), 0);
    p.rank = f.rank();
    p.mode = f.meta_value("mode");
    auto has = [&f](const char* t) {
      auto it = f.events_by_type.find(t);
      return it != f.events_by_type.end() && it->second > 0;
    };
    // The mode the file says it was recorded in; files without it, by their events. Not by a
    // completion alone: Simple mode records failed completions too.
    p.full_mode = p.mode == "full" || (p.mode.empty() && (has("ibv_send_wr") || has("ibv_recv_wr") || has("ibv_completion")));
    p.clock = clocks[i];
    if (f.first_tsc) {
      p.first_ns = p.clock.to_ns(f.first_tsc);
      p.last_ns = p.clock.to_ns(f.last_tsc);
      if (!have_span || p.first_ns < m.start_ns) m.start_ns = p.first_ns;
      if (!have_span || p.last_ns > m.end_ns) m.end_ns = p.last_ns;
      have_span = true;
    }
    for (const auto& [tid, t] : f.threads) {
      if (tid == 0) continue;
      ThreadRow row{static_cast<uint32_t>(m.threads.size()), p.process_id, tid, t.name, t.events_in_file};
      p.thread_of_tid[tid] = row.thread_id;
      m.threads.push_back(std::move(row));
    }

    // Verbs objects, in time order.
    std::vector<ControlEvent>& ev = control[order[i]].events;
    std::stable_sort(ev.begin(), ev.end(), [](const ControlEvent& a, const ControlEvent& b) { return a.tsc < b.tsc; });
    std::unordered_map<uint64_t, uint32_t> device_of_context, mr_of_handle;
    std::unordered_map<uint32_t, uint32_t> live_qp;  // qp_num -> qp_id while not destroyed
    SpanBuilder spans;
    auto device_for = [&](uint64_t context) -> DeviceRow& {
      auto it = device_of_context.find(context);
      if (it != device_of_context.end()) return m.devices[it->second];
      DeviceRow d;  // ports reported without an open (or an open lost to damage)
      d.device_id = static_cast<uint32_t>(m.devices.size());
      d.process_id = p.process_id;
      d.context = context;
      device_of_context[context] = d.device_id;
      m.devices.push_back(d);
      return m.devices.back();
    };
    // QPs of both kinds (verbs, devx): created, connected, destroyed by number.
    auto new_qp = [&](const ControlEvent& c, int64_t ns, uint64_t context, uint64_t handle, uint64_t qp_num) {
      QpRow q;
      q.qp_id = static_cast<uint32_t>(m.qps.size());
      q.process_id = p.process_id;
      q.context = context;
      q.handle = handle;
      q.qp_num = static_cast<uint32_t>(qp_num);
      q.create_tsc = c.tsc;
      q.create_ns = ns;
      q.device_id = device_for(context).device_id;
      q.port = 1;
      return q;
    };
    auto add_qp = [&](const QpRow& q) {
      live_qp[q.qp_num] = q.qp_id;
      p.qps_by_num[q.qp_num].push_back(q.qp_id);
      m.qps.push_back(q);
    };
    auto set_remote = [](QpRow& q, uint64_t qp_num, uint64_t lid, uint64_t gid_prefix, uint64_t gid_iface) {
      q.has_remote = true;
      q.dest_qp_num = qp_num;
      q.remote_lid = lid;
      q.remote_gid_prefix = gid_prefix;
      q.remote_gid_iface = gid_iface;
    };
    auto destroy_qp = [&](uint64_t qp_num, int64_t ns) {
      auto it = live_qp.find(static_cast<uint32_t>(qp_num));
      if (it == live_qp.end()) return;
      m.qps[it->second].destroy_ns = ns;
      live_qp.erase(it);
    };
    for (const ControlEvent& c : ev) {
      int64_t ns = p.clock.to_ns(c.tsc);
      switch (static_cast<EventType>(c.type)) {
        case EventType::ibv_device_open: {
          DeviceRow& d = device_for(c.v[0]);
          d.node_guid = c.v[1];
          d.name = c.name;
          d.open_ns = ns;
          break;
        }
        case EventType::ibv_port_info: {
          DeviceRow& d = device_for(c.v[0]);
          PortRow pr{c.v[1], c.v[2], c.v[3], c.v[4], c.v[5]};
          auto it = std::find_if(d.ports.begin(), d.ports.end(), [&](const PortRow& x) { return x.port == pr.port; });
          if (it != d.ports.end()) *it = pr;
          else d.ports.push_back(pr);
          break;
        }
        case EventType::ibv_qp_create: {
          QpRow q = new_qp(c, ns, c.v[0], c.v[2], c.v[3]);
          q.qp_type = c.v[4];
          add_qp(q);
          break;
        }
        case EventType::ibv_qp_modify: {
          auto it = live_qp.find(static_cast<uint32_t>(c.v[0]));
          if (it == live_qp.end()) break;
          QpRow& q = m.qps[it->second];
          uint64_t mask = c.v[1];
          constexpr uint64_t kState = 1, kPort = 1 << 5, kAv = 1 << 7, kDestQpn = 1 << 20;
          if (mask & kState) q.state = c.v[2];
          if ((mask & kPort) && c.v[3]) q.port = c.v[3];
          // The remote address comes with the RTR transition (IBV_QP_AV | IBV_QP_DEST_QPN); a provider
          // that leaves attr_mask 0 still gives dest_qp_num, so a non-zero one is taken too.
          if ((mask & (kAv | kDestQpn)) || c.v[4]) set_remote(q, c.v[4], c.v[5], c.v[6], c.v[7]);
          break;
        }
        case EventType::ibv_qp_destroy: destroy_qp(c.v[0], ns); break;
        case EventType::devx_qp_create: {
          // context obj qp_num service_type pd log_sq log_rq sq_umem sq_off sq_addr dbr_umem dbr_off uar_page
          // send_cqn recv_cqn memory_kind gpu_ordinal status syndrome
          if (!c.v[2]) break;  // the command failed
          QpRow q = new_qp(c, ns, c.v[0], c.v[1], c.v[2]);
          constexpr uint64_t kRc = 2, kUc = 3, kUd = 4;  // ibv_qp_type of the PRM service types RC, UC, UD
          constexpr uint64_t kStDci = 5;
          q.qp_type = c.v[3] == 0 ? kRc : c.v[3] == 1 ? kUc : c.v[3] == 2 ? kUd : c.v[3] == kStDci ? format::kQpTypeDcInitiator : 0;
          q.gpu_initiated = true;
          q.log_sq_size = c.v[5];
          q.sq_addr = c.v[9];
          q.uar_page = c.v[12];
          q.gpu = c.v[15] == static_cast<uint64_t>(format::MemoryKind::gpu) ? static_cast<int64_t>(c.v[16]) : -1;
          add_qp(q);
          break;
        }
        case EventType::devx_qp_modify: {
          // obj qp_num command remote_qpn remote_lid gid_hi gid_lo send_psn recv_psn mtu status syndrome
          auto it = live_qp.find(static_cast<uint32_t>(c.v[1]));
          if (it == live_qp.end() || c.v[10] != 0) break;
          QpRow& q = m.qps[it->second];
          constexpr uint64_t kRst2Init = 0x502, kInit2Rtr = 0x503, kRtr2Rts = 0x504, k2Err = 0x507, k2Rst = 0x50a;
          if (c.v[2] == kRst2Init) q.state = 1;
          else if (c.v[2] == kInit2Rtr) q.state = 2;
          else if (c.v[2] == kRtr2Rts) q.state = 3;
          else if (c.v[2] == k2Err) q.state = 6;
          else if (c.v[2] == k2Rst) q.state = 0;
          if (c.v[2] == kInit2Rtr) set_remote(q, c.v[3], c.v[4], c.v[5], c.v[6]);
          break;
        }
        case EventType::devx_obj_destroy: {
          constexpr uint64_t kCreateQp = 0x500;
          if (c.v[1] == kCreateQp) destroy_qp(c.v[2], ns);
          break;
        }
        case EventType::cuda_function: p.kernel_names[c.v[0]] = c.name; break;
        case EventType::cuda_launch:
          if (c.v[11] == 0) {
            p.launches.push_back({c.tsc, c.v[0], c.tid});
            p.launches_on[static_cast<int64_t>(c.v[2])].push_back({c.tsc, c.v[0], c.tid});
            spans.by_stream[c.v[1]].push_back({c.tsc, c.v[0], static_cast<int64_t>(c.v[2]), c.v[12] != 0, c.tid});
          }
          break;
        case EventType::cuda_kernel_end: {
          // function stream device launch_tsc ref_tsc end_offset_ns
          const double ticks = static_cast<double>(static_cast<int64_t>(c.v[5])) / (p.clock.ns_per_tick > 0 ? p.clock.ns_per_tick : 1.0);
          const uint64_t end = c.v[4] + static_cast<uint64_t>(static_cast<int64_t>(ticks));
          spans.end_of[{c.v[1], c.v[3]}] = {end, end};
          break;
        }
        case EventType::cuda_kernel_seen_end:
          // function stream device launch_tsc running_tsc: it ended after running_tsc and before
          // this event. It ends at that last look that found it unfinished: the pollers look after
          // each doorbell, so a kernel's doorbells come before that look, and its successor's
          // after (docs/gpu-doorbells.md, "Kernels"). A look can come late (a poller backs off
          // while no doorbell comes); taking the end that early never gives a successor's
          // doorbells to the kernel before it.
          spans.end_of[{c.v[1], c.v[3]}] = {c.v[4], c.tsc};
          break;
        case EventType::ibv_mr_reg: {
          MrRow r;
          r.mr_id = static_cast<uint32_t>(m.mrs.size());
          r.process_id = p.process_id;
          r.pd = c.v[0], r.handle = c.v[1], r.addr = c.v[2], r.length = c.v[3], r.access = c.v[4];
          r.lkey = c.v[5], r.rkey = c.v[6], r.memory_kind = c.v[7];
          r.gpu_ordinal = static_cast<int64_t>(c.v[8]);
          r.reg_ns = ns;
          mr_of_handle[r.handle] = r.mr_id;
          m.mrs.push_back(r);
          break;
        }
        case EventType::ibv_mr_dereg: {
          auto it = mr_of_handle.find(c.v[0]);
          if (it == mr_of_handle.end()) break;
          m.mrs[it->second].dereg_ns = ns;
          mr_of_handle.erase(it);
          break;
        }
        default: break;
      }
    }
    p.span_slack_ticks = static_cast<uint64_t>(20000.0 / (p.clock.ns_per_tick > 0 ? p.clock.ns_per_tick : 1.0));  // 20 us
    spans.build(&p);
    ev.clear();
    ev.shrink_to_fit();
    // Aggregate mode records no QP events, but its endpoint-pair counters name each connected QP
    // (local LID and number) and its peer: enough to pair QPs across processes, so the matrices
    // get real peers instead of "unknown". One row per QP number (the first peer it had).
    for (const auto& [local, remote] : f.aggregate_endpoint_pairs) {
      const uint32_t qpn = static_cast<uint32_t>(local);
      if (p.qps_by_num.count(qpn)) continue;
      QpRow q;
      q.qp_id = static_cast<uint32_t>(m.qps.size());
      q.process_id = p.process_id;
      q.qp_num = qpn;
      q.port = 1;
      q.aggregate_lid = local >> 32;
      q.has_remote = true;
      q.dest_qp_num = static_cast<uint32_t>(remote);
      q.remote_lid = remote >> 32;
      p.qps_by_num[qpn].push_back(q.qp_id);
      m.qps.push_back(q);
    }
    if (!control[order[i]].nvtx.empty()) {
      RangeCounters counters;
      std::vector<RangeRow> ranges = control[order[i]].nvtx.finish(f.last_tsc, &counters);
      for (size_t r = 0; r < ranges.size(); ++r) {
        RangeRow& row = ranges[r];
        row.range_id = (uint64_t{p.process_id} << 40) | r;
        row.process_id = p.process_id;
        auto t = p.thread_of_tid.find(row.tid);
        row.thread_id = t != p.thread_of_tid.end() ? int64_t{t->second} : kNone;
        row.start_ns = p.clock.to_ns(row.start_tsc), row.end_ns = p.clock.to_ns(row.end_tsc);
      }
      p.ranges.set(std::move(ranges));
      p.ranges.counters = counters;
    }
    if (!control[order[i]].nccl.empty()) {
      p.nccl_tasks = control[order[i]].nccl.finish();
      for (size_t t = 0; t < p.nccl_tasks.size(); ++t) {
        NcclTaskRow& row = p.nccl_tasks[t];
        row.task_id = (uint64_t{p.process_id} << 40) | t;
        row.process_id = p.process_id;
        auto th = p.thread_of_tid.find(row.tid);
        row.thread_id = th != p.thread_of_tid.end() ? int64_t{th->second} : kNone;
        row.ts_ns = p.clock.to_ns(row.tsc);
        // The call's own range: open on the launching thread, whose NCCL call launched it.
        if (row.thread_id != kNone) row.range = p.ranges.at(row.thread_id, row.ts_ns);
        p.nccl_task_index[row.plugin_task] = static_cast<uint32_t>(t);
      }
    }
    m.processes.push_back(std::move(p));
  }
  pair_queue_pairs(&m);
  std::vector<std::vector<MessageStamp>> message_stamps(order.size());
  for (size_t i = 0; i < order.size(); ++i) message_stamps[i] = std::move(control[order[i]].messages.stamps);
  m.clock_sync = synchronize_host_clocks(&m, message_stamps, clock_sync);
  std::vector<std::vector<LayerControlEvent>> layer_events(order.size());
  for (size_t i = 0; i < order.size(); ++i) layer_events[i] = std::move(control[order[i]].layer_events);
  m.layers = build_layer_model(m, layer_events);
  return m;
}

}  // namespace sigmatrace::analysis

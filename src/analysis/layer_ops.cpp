// See layer_ops.h.
#include "analysis/layer_ops.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "analysis/aggregates.h"
#include "analysis/associator_list.h"
#include "analysis/flow_ids.h"
#include "analysis/experiment_model.h"
#include "analysis/ibv_names.h"
#include "format/event_types.h"
#include "format/trace_reader.h"

namespace sigmatrace::analysis {

using format::EventType;
using format::OfiOp;
using format::UcxOp;

// ---- the experiment-wide model: who is whose peer ----------------------------------------------------

struct ProcLayer {
  std::unordered_map<uint64_t, int64_t> ucx_ep_peer;          // ucp_ep_h -> process
  std::unordered_map<uint64_t, std::string> ucx_transport;    // uct_iface_h -> "tcp/lo"
  std::unordered_map<uint64_t, std::string> ofi_provider;     // fid_ep -> "tcp;ofi_rxm"
  std::unordered_map<uint64_t, int64_t> ofi_ep_peer;          // connected endpoint -> process
  std::unordered_map<uint64_t, int64_t> ofi_addr_peer;        // fi_addr_t -> process
  int64_t single_ucx_peer = kNone, single_ofi_peer = kNone;   // when the process talks to one peer only
};

// Built once, at the end of the first pass; read-only afterwards (the second pass's workers share it).
struct LayerModel {
  std::vector<ProcLayer> procs;
};

namespace {

bool prefix_equal(const std::string& a, const std::string& b) {
  size_t n = std::min(a.size(), b.size());
  return n >= 8 && a.compare(0, n, b, 0, n) == 0;
}

}  // namespace

bool is_layer_control(uint16_t type) {
  switch (static_cast<EventType>(type)) {
    case EventType::ucx_worker_create: case EventType::ucx_ep_create: case EventType::ucx_iface_open:
    case EventType::ofi_ep_open: case EventType::ofi_ep_address: case EventType::ofi_av_insert:
      return true;
    default: return false;
  }
}

std::shared_ptr<LayerModel> build_layer_model(const ExperimentModel& m, const std::vector<std::vector<LayerControlEvent>>& events) {
  auto lm = std::make_shared<LayerModel>();
  struct Raw {
    std::vector<std::pair<uint64_t, std::string>> ep_peers;        // ucp ep -> peer worker address prefix
    std::vector<std::pair<uint64_t, std::string>> ofi_peer_addr;   // ofi ep -> peer address
    std::vector<std::pair<uint64_t, std::string>> ofi_av;          // fi_addr -> address
  };
  std::vector<Raw> raw(m.processes.size());
  std::vector<std::pair<std::string, uint32_t>> worker_uuid, ofi_local;  // -> process
  lm->procs.assign(m.processes.size(), {});
  for (const ProcessRow& p : m.processes) {
    if (p.process_id >= events.size()) continue;
    ProcLayer& pl = lm->procs[p.process_id];
    for (const LayerControlEvent& ev : events[p.process_id]) {
      const uint64_t* v = ev.v;
      switch (static_cast<EventType>(ev.type)) {
        case EventType::ucx_worker_create:
          if (ev.bytes.size() >= 9) worker_uuid.push_back({ev.bytes.substr(1, 8), p.process_id});
          break;
        case EventType::ucx_ep_create:
          if (v[2] == static_cast<uint64_t>(format::UcxPeerKind::worker_address) && v[1] && ev.bytes.size() >= 9)
            raw[p.process_id].ep_peers.push_back({v[1], ev.bytes.substr(1, 8)});
          break;
        case EventType::ucx_iface_open: pl.ucx_transport[v[0]] = ev.bytes; break;
        case EventType::ofi_ep_open: pl.ofi_provider[v[1]] = ev.bytes; break;
        case EventType::ofi_ep_address:
          if (v[1] == static_cast<uint64_t>(format::OfiAddressKind::local)) ofi_local.push_back({ev.bytes, p.process_id});
          else raw[p.process_id].ofi_peer_addr.push_back({v[0], ev.bytes});
          break;
        case EventType::ofi_av_insert: raw[p.process_id].ofi_av.push_back({v[2], ev.bytes}); break;
        default: break;
      }
    }
  }
  auto find_uuid = [&](const std::string& u) -> int64_t {
    for (const auto& [uu, pid] : worker_uuid)
      if (uu == u) return pid;
    return kNone;
  };
  auto find_ofi = [&](const std::string& a, uint32_t self) -> int64_t {
    for (const auto& [addr, pid] : ofi_local)
      if (pid != self && prefix_equal(addr, a)) return pid;
    return kNone;
  };
  std::vector<std::map<int64_t, int>> ucx_peers(m.processes.size()), ofi_peers(m.processes.size());
  for (const ProcessRow& p : m.processes) {
    ProcLayer& pl = lm->procs[p.process_id];
    for (const auto& [ep, uuid] : raw[p.process_id].ep_peers)
      if (int64_t q = find_uuid(uuid); q != kNone && q != p.process_id) pl.ucx_ep_peer[ep] = q, ucx_peers[p.process_id][q]++;
    for (const auto& [ep, a] : raw[p.process_id].ofi_peer_addr)
      if (int64_t q = find_ofi(a, p.process_id); q != kNone) {
        pl.ofi_ep_peer[ep] = q, ofi_peers[p.process_id][q]++;
        ofi_peers[static_cast<size_t>(q)][p.process_id]++;  // the accepting side learns its peer from the connect
      }
    for (const auto& [fa, a] : raw[p.process_id].ofi_av)
      if (int64_t q = find_ofi(a, p.process_id); q != kNone) pl.ofi_addr_peer[fa] = q, ofi_peers[p.process_id][q]++;
  }
  for (const ProcessRow& p : m.processes) {
    ProcLayer& pl = lm->procs[p.process_id];
    if (ucx_peers[p.process_id].size() == 1) pl.single_ucx_peer = ucx_peers[p.process_id].begin()->first;
    if (ofi_peers[p.process_id].size() == 1) pl.single_ofi_peer = ofi_peers[p.process_id].begin()->first;
  }
  return lm;
}

namespace {

// The process's peers and transports; a model made without a layer model (by hand, in tests) has none.
const ProcLayer& process_layer(const ExperimentModel& m, uint32_t pid) {
  static const ProcLayer kNoLayer;
  return m.layers && pid < m.layers->procs.size() ? m.layers->procs[pid] : kNoLayer;
}

// Flow id of the seq-th message from process src to dst on (layer, channel, tag): both sides compute it.
uint64_t layer_flow_id(uint64_t layer, int64_t src, int64_t dst, uint64_t channel, uint64_t tag, uint64_t seq) {
  uint64_t h = splitmix64(0x5ca1ab1e00000000ull + layer);
  for (uint64_t x : {static_cast<uint64_t>(src), static_cast<uint64_t>(dst), channel, tag, seq}) h = splitmix64(h ^ x);
  return hashed_flow_id(h);
}

enum class Dir { out, in, read, none };
struct OpKind {
  const char* name;
  unsigned op_class;
  Dir dir;
  uint64_t channel;  // 0: no message matching
};

OpKind ucx_kind(uint64_t op) {
  switch (static_cast<UcxOp>(op)) {
    case UcxOp::put: return {"ucp_put", kOpWrite, Dir::out, 0};
    case UcxOp::get: return {"ucp_get", kOpRead, Dir::read, 0};
    case UcxOp::atomic_post: return {"ucp_atomic_post", kOpAtomicFa, Dir::out, 0};
    case UcxOp::atomic_fetch: return {"ucp_atomic_fetch", kOpAtomicFa, Dir::out, 0};
    case UcxOp::tag_send: return {"ucp_tag_send", kOpSend, Dir::out, 1};
    case UcxOp::tag_send_sync: return {"ucp_tag_send_sync", kOpSend, Dir::out, 1};
    case UcxOp::tag_recv: return {"ucp_tag_recv", kOpRecv, Dir::in, 1};
    case UcxOp::tag_msg_recv: return {"ucp_tag_msg_recv", kOpRecv, Dir::in, 0};
    case UcxOp::stream_send: return {"ucp_stream_send", kOpSend, Dir::out, 0};
    case UcxOp::stream_recv: return {"ucp_stream_recv", kOpRecv, Dir::in, 0};
    case UcxOp::am_send: return {"ucp_am_send", kOpSend, Dir::out, 3};
    case UcxOp::am_recv_data: return {"ucp_am_recv_data", kOpRecv, Dir::none, 0};
    case UcxOp::ep_flush: return {"ucp_ep_flush", kOpUnknown, Dir::none, 0};
    case UcxOp::worker_flush: return {"ucp_worker_flush", kOpUnknown, Dir::none, 0};
    case UcxOp::worker_fence: return {"ucp_worker_fence", kOpUnknown, Dir::none, 0};
    case UcxOp::tag_probe: return {"ucp_tag_probe", kOpUnknown, Dir::none, 0};
    default: return {"ucp_call", kOpUnknown, Dir::none, 0};
  }
}

constexpr uint64_t kFiRecv = 1ull << 10;  // FI_RECV in a completion's flags

// What a libfabric operation waits under for its completion: its context, and whether it receives
// (a program may use one context for a send and a receive).
uint64_t ofi_completion_key(uint64_t context, bool receive) { return context << 1 | (receive ? 1 : 0); }

bool ofi_is_inject(uint64_t op) {
  const auto o = static_cast<OfiOp>(op);
  return o == OfiOp::inject || o == OfiOp::injectdata || o == OfiOp::tinject || o == OfiOp::tinjectdata || o == OfiOp::inject_write ||
         o == OfiOp::inject_writedata || o == OfiOp::inject_atomic;
}

OpKind ofi_kind(uint64_t op) {
  const auto o = static_cast<OfiOp>(op);
  if (o >= OfiOp::send && o <= OfiOp::injectdata) return {"fi_send", kOpSend, Dir::out, 2};
  if (o >= OfiOp::recv && o <= OfiOp::recvmsg) return {"fi_recv", kOpRecv, Dir::in, 2};
  if (o >= OfiOp::tsend && o <= OfiOp::tinjectdata) return {"fi_tsend", kOpSend, Dir::out, 1};
  if (o >= OfiOp::trecv && o <= OfiOp::trecvmsg) return {"fi_trecv", kOpRecv, Dir::in, 1};
  if (o >= OfiOp::read && o <= OfiOp::readmsg) return {"fi_read", kOpRead, Dir::read, 0};
  if (o >= OfiOp::write && o <= OfiOp::inject_writedata) return {"fi_write", kOpWrite, Dir::out, 0};
  if (o >= OfiOp::atomic && o <= OfiOp::compare_atomicmsg) return {"fi_atomic", kOpAtomicFa, Dir::out, 0};
  return {"fi_call", kOpUnknown, Dir::none, 0};
}

}  // namespace

// ---- second pass, one file -----------------------------------------------------------------------------

namespace {

class LayerOpsAssociation final : public LayerAssociator {
 public:
  explicit LayerOpsAssociation(FileContext& f)
      : m(f.model), pid(f.process.process_id), sink(f.sink), counters(f.counters), pl(process_layer(f.model, pid)),
        full_mode(f.process.mode == "full"), untimed_receives(f.counters.receives_untimed) {}
  void on_event(int64_t thread, int64_t ts, const format::DecodedEvent& ev) override;
  void on_aggregate(const format::DecodedEvent& ev) override;
  void finish() override;

 private:
  const ExperimentModel& m;
  uint32_t pid;
  FileSink* sink;
  ProcessCounters& counters;
  const ProcLayer& pl;
  bool full_mode;  // libfabric completions are recorded one by one
  uint64_t& untimed_receives;
  uint64_t ops = 0, errors = 0, completions = 0;
  // CallRecord names, kept for the file (a node set: the strings never move).
  std::unordered_set<std::string> names;
  const char* intern(const std::string& name) { return names.insert(name).first->c_str(); }
  std::map<std::tuple<uint64_t, int64_t, uint64_t, uint64_t>, uint64_t> seq_out, seq_in;  // (layer, peer, channel, tag)
  std::unordered_map<uint64_t, std::string> ucx_ep_transport;  // the last transport seen on each UCP endpoint
  struct Inflight {
    OpRecord op;
    bool receive;
  };
  std::unordered_map<uint64_t, Inflight> inflight;  // operations whose completion is still to come
  std::map<std::tuple<std::string, std::string, int64_t>, std::pair<uint64_t, uint64_t>> traffic;  // (layer, transport, dst)

  uint64_t next_id(uint64_t* n) { return (uint64_t{pid} << 40) | (1ull << 39) | (*n)++; }

  void count(const char* layer, const std::string& transport, int64_t peer, Dir dir, uint64_t bytes) {
    if (dir == Dir::out) {
      auto& t = traffic[{layer, transport, peer}];
      t.first += 1, t.second += bytes;
    } else if (dir == Dir::read) {
      // bytes pulled from the peer travel peer -> self: kept with a negative marker, resolved in finish()
      auto& t = traffic[{std::string(layer) + "<", transport, peer}];
      t.first += 1, t.second += bytes;
    }
  }

  // When an operation's completion is known: at its call (UCX returned a status, not a request;
  // an active message's arrival), later (a request or libfabric context whose completion the
  // trace holds: ucx_request_done, ofi_completion), or never (callback-completed requests,
  // libfabric without Full mode, injects).
  struct Completes {
    enum When { at_call, later, unknown } when;
    uint64_t key;  // later: the request, or ofi_completion_key()
  };

  void op(int64_t thread, int64_t ts, const char* layer, uint64_t layer_no, const OpKind& k, uint64_t bytes, int64_t peer,
          const std::string& transport, uint64_t tag, bool tag_exact, int64_t status, Completes completes) {
    if (k.op_class != kOpUnknown) count(layer, transport, peer, k.dir, bytes);
    if (sink) {
      const std::string name = transport.empty() ? std::string(k.name) : std::string(k.name) + " [" + transport + "]";
      sink->call(CallRecord{ts, 0, pid, thread, intern(name), kNone, bytes, 1, status});
    }
    if (k.op_class == kOpUnknown) return;
    OpRecord r;
    r.op_id = next_id(&ops);
    r.ts_ns = ts;
    r.process_id = pid;
    r.thread_id = thread;
    r.layer = layer;
    r.op_class = k.op_class;
    r.bytes = bytes;
    r.peer_process_id = peer;
    r.status = status;
    r.is_call = true;
    if (k.channel && peer != kNone && tag_exact) {
      if (k.dir == Dir::out) {
        uint64_t s = ++seq_out[{layer_no, peer, k.channel, tag}];
        r.flow_id = layer_flow_id(layer_no, pid, peer, k.channel, tag, s);
      } else if (k.dir == Dir::in) {
        uint64_t s = ++seq_in[{layer_no, peer, k.channel, tag}];
        r.flow_id = layer_flow_id(layer_no, peer, pid, k.channel, tag, s);
      }
    }
    if (sink) sink->work_request(r);
    if (status < 0) completes.when = Completes::at_call;  // failed: nothing to wait for
    switch (completes.when) {
      case Completes::at_call: complete(r, ts, status, k.dir == Dir::in && status >= 0, bytes); break;
      case Completes::later: {
        // A request address is reused once freed: an operation still waiting on it never had its
        // completion traced.
        auto [it, fresh] = inflight.try_emplace(completes.key, Inflight{r, k.dir == Dir::in});
        if (!fresh) {
          untimed(it->second.op);
          it->second = Inflight{r, k.dir == Dir::in};
        }
        break;
      }
      case Completes::unknown: untimed(r); break;
    }
  }

  // An operation whose completion the trace does not hold: no duration, and a matched receive's
  // arrow is not drawn (its post may precede the send), counted instead.
  void untimed(const OpRecord& r) {
    if (r.op_class == kOpRecv && r.flow_id) ++untimed_receives;
    if (sink) sink->op(r);
  }

  // An operation's completion at ts: its duration, what a receive got, and (for a matched
  // receive) the end of the sender's arrow, placed when the message had arrived.
  void complete(OpRecord& r, int64_t ts, int64_t status, bool receive, uint64_t bytes) {
    r.dur_ns = ts - r.ts_ns;
    r.status = status;
    if (receive && status >= 0) r.bytes = bytes;
    if (receive && r.flow_id && status >= 0) {
      CompletionRecord cr;
      cr.completion_id = next_id(&completions);
      cr.ts_ns = ts;
      cr.process_id = pid;
      cr.thread_id = r.thread_id;
      cr.byte_len = r.bytes;
      cr.opcode = 128;  // IBV_WC_RECV: trace.sqlite's completion table names it RECV
      cr.op_id = static_cast<int64_t>(r.op_id);
      cr.flow_id = r.flow_id;
      cr.is_receive = true;
      r.completion_id = static_cast<int64_t>(cr.completion_id);
      if (sink) sink->op(r), sink->completion(cr);
      return;
    }
    if (sink) sink->op(r);
  }

  // A traced completion of a request or context (UCX: the request; libfabric:
  // ofi_completion_key()); `length`: what a receive got, when `has_length`.
  void completed(uint64_t key, int64_t ts, int64_t status, uint64_t length, bool has_length) {
    auto it = inflight.find(key);
    if (it == inflight.end()) return;
    Inflight f = it->second;
    inflight.erase(it);
    complete(f.op, ts, status, f.receive, has_length ? length : f.op.bytes);
  }

  void error(int64_t thread, int64_t ts, const char* layer, const std::string& what, uint64_t object, int64_t err) {
    if (!sink) return;
    ErrorRecord e{next_id(&errors), ts, pid, thread, layer, "call", what, object, err, kNone};
    sink->error(e);
  }

  // The sending process of a tagged receive: the only peer, or (Open MPI pml ucx) the source rank
  // carried in bits 20-39 of the tag.
  int64_t ucx_recv_peer(uint64_t tag, uint64_t mask) const {
    if (pl.single_ucx_peer != kNone) return pl.single_ucx_peer;
    if ((mask & 0xFFFFF00000ull) == 0xFFFFF00000ull) {
      long rank = static_cast<long>((tag >> 20) & 0xFFFFF);
      for (const ProcessRow& p : m.processes)
        if (p.rank == rank && p.process_id != pid) return p.process_id;
    }
    return kNone;
  }
};

void LayerOpsAssociation::on_event(int64_t thread, int64_t ts, const format::DecodedEvent& ev) {
  const uint64_t* v = ev.values;
  switch (static_cast<EventType>(ev.type)) {
    case EventType::ucx_op: {  // op object bytes tag tag_mask remote_addr request status iface uct_ep
      const OpKind k = ucx_kind(v[0]);
      int64_t peer = kNone;
      if (k.dir == Dir::in) peer = ucx_recv_peer(v[3], v[4]);
      else if (auto it = pl.ucx_ep_peer.find(v[1]); it != pl.ucx_ep_peer.end()) peer = it->second;
      std::string transport;
      if (auto it = pl.ucx_transport.find(v[8]); v[8] && it != pl.ucx_transport.end()) {
        transport = it->second;
        ucx_ep_transport[v[1]] = transport;
      } else if (auto e = ucx_ep_transport.find(v[1]); e != ucx_ep_transport.end()) {
        transport = e->second;
      }
      // A request (in progress) completes when the program sees it done; a status, at the call.
      Completes when{v[6] ? Completes::later : Completes::at_call, v[6]};
      op(thread, ts, "ucx", 1, k, v[2], peer, transport, v[3], k.dir != Dir::in || v[4] == ~uint64_t{0}, ev.as_i64(7), when);
      if (ev.as_i64(7) < 0) error(thread, ts, "ucx", k.name, v[1], ev.as_i64(7));
      return;
    }
    case EventType::ucx_am_recv: {  // worker id header_length length reply_ep recv_attr
      int64_t peer = pl.single_ucx_peer;
      if (auto it = pl.ucx_ep_peer.find(v[4]); it != pl.ucx_ep_peer.end()) peer = it->second;
      op(thread, ts, "ucx", 1, {"ucp_am_recv", kOpRecv, Dir::in, 3}, v[3], peer, "", v[1], true, 0, {Completes::at_call, 0});
      return;
    }
    case EventType::ucx_request_done:  // request status tag length (kUcxLengthUnknown: none given)
      completed(v[0], ts, ev.as_i64(1), v[3], v[3] != format::kUcxLengthUnknown);
      return;
    case EventType::ucx_request_free:  // request: completed at the latest now (length not known)
      completed(v[0], ts, 0, 0, false);
      return;
    case EventType::ofi_completion:  // cq context flags length tag source
      if (v[1]) completed(ofi_completion_key(v[1], (v[2] & kFiRecv) != 0), ts, 0, v[3], true);
      return;
    case EventType::ucx_call_error:
      error(thread, ts, "ucx", std::string(ucx_kind(v[0]).name) + "#" + std::to_string(v[0]), v[1], ev.as_i64(2));
      return;
    case EventType::ofi_op: {  // op ep bytes peer tag remote_addr context result tag_ignore
      const OpKind k = ofi_kind(v[0]);
      int64_t peer = kNone;
      if (auto it = pl.ofi_addr_peer.find(v[3]); v[3] != ~uint64_t{0} && it != pl.ofi_addr_peer.end()) peer = it->second;
      else if (auto e = pl.ofi_ep_peer.find(v[1]); e != pl.ofi_ep_peer.end()) peer = e->second;
      else peer = pl.single_ofi_peer;
      std::string provider;
      if (auto it = pl.ofi_provider.find(v[1]); it != pl.ofi_provider.end()) provider = it->second;
      // tagged receives match exactly only with an empty ignore mask (files before tag_ignore
      // existed kept it in remote_addr)
      const uint64_t ignore = ev.field_count > 8 ? v[8] : v[5];
      const bool exact = !(k.dir == Dir::in && k.channel == 1 && ignore != 0);
      // Full mode records each completion with its context; injects have none.
      const bool receive = k.dir == Dir::in;
      Completes when{Completes::unknown, 0};
      if (full_mode && v[6] && !ofi_is_inject(v[0])) when = {Completes::later, ofi_completion_key(v[6], receive)};
      op(thread, ts, "ofi", 2, k, v[2], peer, provider, k.channel == 1 ? v[4] : 0, exact, ev.as_i64(7), when);
      return;
    }
    case EventType::ofi_cq_read:
      if (sink) sink->call(CallRecord{ts, 0, pid, thread, "fi_cq_read", kNone, 0, v[1], static_cast<int64_t>(v[1])});
      return;
    case EventType::ofi_completion_error:  // cq context flags error prov_errno
      error(thread, ts, "ofi", "completion", v[1], ev.as_i64(3));
      if (v[1]) completed(ofi_completion_key(v[1], (v[2] & kFiRecv) != 0), ts, -std::abs(ev.as_i64(3)), 0, false);
      return;
    case EventType::ofi_call_error:
      error(thread, ts, "ofi", std::string(ofi_kind(v[0]).name) + "#" + std::to_string(v[0]), v[1], ev.as_i64(2));
      return;
    default: return;
  }
}

void LayerOpsAssociation::on_aggregate(const format::DecodedEvent& ev) {
  const uint64_t* v = ev.values;  // tid key_kind key_a key_b count bytes
  if (v[1] == static_cast<uint64_t>(format::AggregateKey::ucx_ep_op)) {
    const OpKind k = ucx_kind(v[3]);
    auto it = pl.ucx_ep_peer.find(v[2]);
    auto& t = traffic[{k.dir == Dir::read ? "ucx<" : "ucx", "", it != pl.ucx_ep_peer.end() ? it->second : kNone}];
    if (k.dir == Dir::out || k.dir == Dir::read) t.first += v[4], t.second += v[5];
    return;
  }
  if (v[1] == static_cast<uint64_t>(format::AggregateKey::ofi_ep_op)) {
    const OpKind k = ofi_kind(v[3]);
    auto it = pl.ofi_ep_peer.find(v[2]);
    int64_t peer = it != pl.ofi_ep_peer.end() ? it->second : pl.single_ofi_peer;
    auto& t = traffic[{k.dir == Dir::read ? "ofi<" : "ofi", "", peer}];
    if (k.dir == Dir::out || k.dir == Dir::read) t.first += v[4], t.second += v[5];
    return;
  }
}

void LayerOpsAssociation::finish() {
  {  // completion not in the trace: in posting order
    std::vector<const OpRecord*> left;
    for (const auto& [key, f] : inflight) left.push_back(&f.op);
    std::sort(left.begin(), left.end(), [](const OpRecord* a, const OpRecord* b) { return a->op_id < b->op_id; });
    for (const OpRecord* r : left) untimed(*r);
  }
  inflight.clear();
  for (const auto& [key, t] : traffic) {
    const auto& [layer, transport, peer] = key;
    LayerTraffic lt;
    const bool read = !layer.empty() && layer.back() == '<';
    lt.layer = read ? layer.substr(0, layer.size() - 1) : layer;
    lt.transport = transport;
    // reads: bytes went from the peer to this process
    if (read) lt.src = peer == kNone ? pid : static_cast<uint32_t>(peer), lt.dst = peer == kNone ? kNone : pid;
    else lt.src = pid, lt.dst = peer;
    lt.ops = t.first, lt.bytes = t.second;
    if (read && peer == kNone) lt.dst = kNone;  // unknown source: counted as leaving this process to "unknown"
    counters.layer_traffic.push_back(lt);
  }
  traffic.clear();
}

std::unique_ptr<LayerAssociator> make_layer_ops_associator(FileContext& f) { return std::make_unique<LayerOpsAssociation>(f); }

constexpr EventIdRange kUcxOfiEvents[] = {{300, 499}};
constexpr format::AggregateKey kUcxOfiKeys[] = {format::AggregateKey::ucx_ep_op, format::AggregateKey::ofi_ep_op};

}  // namespace

extern const AssociatorRegistration kUcxOfiAssociator = {"ucx,ofi", kUcxOfiEvents, kUcxOfiKeys, &make_layer_ops_associator};

void add_layer_traffic(const ExperimentModel& m, Aggregates* agg) {
  const size_t np = m.processes.size(), nh = m.hosts.size();
  for (const LayerTraffic& t : layer_traffic(*agg)) {
    size_t src = t.src, dst = t.dst == kNone ? np : static_cast<size_t>(t.dst);
    if (src >= np) continue;
    agg->rank_matrix.bytes[src][dst] += t.bytes;
    agg->rank_matrix.ops[src][dst] += t.ops;
    size_t hs = m.processes[src].host_id, hd = dst == np ? nh : m.processes[dst].host_id;
    agg->host_matrix.bytes[hs][hd] += t.bytes;
    agg->host_matrix.ops[hs][hd] += t.ops;
  }
}

std::vector<LayerTraffic> layer_traffic(const Aggregates& agg) {
  std::vector<LayerTraffic> rows;
  for (const ProcessCounters& p : agg.process) rows.insert(rows.end(), p.layer_traffic.begin(), p.layer_traffic.end());
  std::sort(rows.begin(), rows.end(), [](const LayerTraffic& a, const LayerTraffic& b) {
    return std::tie(a.src, a.layer, a.transport, a.dst) < std::tie(b.src, b.layer, b.transport, b.dst);
  });
  return rows;
}

}  // namespace sigmatrace::analysis

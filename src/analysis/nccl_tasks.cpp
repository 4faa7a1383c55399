// See nccl_tasks.h.
#include "analysis/nccl_tasks.h"

#include <string_view>

#include "format/event_types.h"

namespace sigmatrace::analysis {

using format::EventType;
using format::NcclTaskKind;

namespace {
std::string field(std::string_view s, int n) {  // the n-th tab-separated field
  for (; n > 0; --n) {
    const size_t tab = s.find('\t');
    if (tab == std::string_view::npos) return "";
    s.remove_prefix(tab + 1);
  }
  return std::string(s.substr(0, s.find('\t')));
}
}  // namespace

std::string NcclTaskRow::call_name() const {
  if (kind == static_cast<uint64_t>(NcclTaskKind::send)) return "ncclSend";
  if (kind == static_cast<uint64_t>(NcclTaskKind::recv)) return "ncclRecv";
  return "nccl" + func;
}

uint64_t NcclTaskRow::bytes() const {
  static const std::unordered_map<std::string_view, uint64_t> kSizes = {
      {"ncclInt8", 1},    {"ncclUint8", 1},    {"ncclInt32", 4},     {"ncclUint32", 4},       {"ncclInt64", 8},
      {"ncclUint64", 8},  {"ncclFloat16", 2},  {"ncclFloat32", 4},   {"ncclFloat64", 8},      {"ncclBfloat16", 2},
      {"ncclFloat8e4m3", 1}, {"ncclFloat8e5m2", 1}};
  auto it = kSizes.find(datatype);
  return it == kSizes.end() ? 0 : count * it->second;
}

int64_t NcclTaskRow::algorithm_bytes() const {
  const uint64_t b = bytes();
  if (!b || nranks < 1) return -1;
  const auto n = static_cast<uint64_t>(nranks);
  if (kind == static_cast<uint64_t>(NcclTaskKind::send)) return static_cast<int64_t>(b);
  if (kind != static_cast<uint64_t>(NcclTaskKind::collective)) return -1;
  if (func == "AllReduce") return static_cast<int64_t>(2 * (n - 1) * b / n);
  if (func == "AllGather" || func == "ReduceScatter") return static_cast<int64_t>((n - 1) * b);
  return -1;
}

void NcclTaskCollector::on_event(uint32_t tid, const format::DecodedEvent& ev) {
  const uint64_t* v = ev.values;
  if (ev.type == static_cast<uint16_t>(EventType::nccl_comm)) {
    // context comm_hash rank nranks nnodes name
    comms_[v[0]] = {v[1], ev.as_i64(2), ev.as_i64(3), std::string(ev.bytes[5])};
    return;
  }
  if (ev.type != static_cast<uint16_t>(EventType::nccl_task)) return;
  // context task kind seq count peer channels warps names
  NcclTaskRow t;
  t.plugin_task = v[1];
  t.tid = tid;
  t.tsc = ev.tsc;
  if (auto c = comms_.find(v[0]); c != comms_.end())
    t.comm_hash = c->second.hash, t.comm_name = c->second.name, t.rank = c->second.rank, t.nranks = c->second.nranks;
  t.kind = v[2], t.seq = v[3], t.count = v[4], t.peer = ev.as_i64(5), t.channels = v[6], t.warps = v[7];
  const std::string_view names = ev.bytes[8];
  t.func = field(names, 0), t.datatype = field(names, 1), t.algorithm = field(names, 2), t.protocol = field(names, 3);
  tasks_.push_back(std::move(t));
}

void NcclWorkRequestMatcher::on_net_wr(int64_t thread, const format::DecodedEvent& ev, NcclAttribution* counts) {
  const uint64_t* v = ev.values;  // task channel peer is_send step qp_num wr_id
  auto it = index_->find(v[0]);
  if (it == index_->end()) {
    ++counts->unknown_steps;
    by_wr_.erase({thread, v[5], v[6]});
    by_qp_.erase({thread, v[5], 0});
    return;
  }
  by_wr_[{thread, v[5], v[6]}] = it->second;
  by_qp_[{thread, v[5], 0}] = it->second;
}

int64_t NcclWorkRequestMatcher::task_of(int64_t thread, uint64_t qp_num, uint64_t wr_id, bool wr_id_known, uint64_t wr_count,
                                        NcclAttribution* counts) const {
  if (wr_id_known) {
    if (auto it = by_wr_.find({thread, qp_num, wr_id}); it != by_wr_.end()) {
      counts->by_wr_id += wr_count;
      return it->second;
    }
  }
  if (auto it = by_qp_.find({thread, qp_num, 0}); it != by_qp_.end()) {
    counts->by_qp += wr_count;
    return it->second;
  }
  counts->unattributed += wr_count;
  return -1;
}

}  // namespace sigmatrace::analysis

// The "ibverbs" provider object and what it records when verbs objects come and go: device open
// (name, GUID, each port's LID and GID), PD, MR (with host or GPU memory), CQ, SRQ, QP create and
// every QP state change (with what the analysis needs to pair QPs across processes), destroy.
// Control path only (application threads, but not per operation): may call verbs query functions
// and dlopen(RTLD_NOLOAD); never changes errno as the caller sees it.
#include <dlfcn.h>

#include "profiler/providers/dl_resolver_hooks.h"
#include "profiler/providers/verbs/ibverbs_state.h"
#include "profiler/providers/provider.h"
#include "profiler/runtime/log.h"

namespace sigmatrace::profiler {

namespace ibv {

std::atomic<bool> g_active{false};
TraceMode g_mode = TraceMode::simple;

// Real functions the provider calls itself (not interposed).
RealSymbol g_real_query_device{"ibv_query_device", "libibverbs.so.1", {}, {}};
RealSymbol g_real_query_port{"ibv_query_port", "libibverbs.so.1", {}, {}};
RealSymbol g_real_query_gid{"ibv_query_gid", "libibverbs.so.1", {}, {}};
RealSymbol g_real_get_device_guid{"ibv_get_device_guid", "libibverbs.so.1", {}, {}};
ibv_qp_ex* real_qp_to_qp_ex(ibv_qp* qp);

namespace {

void record_ports(ibv_context* ctx, ContextState* c) {
  auto query_device = real_function<int (*)(ibv_context*, ibv_device_attr*)>(g_real_query_device);
  auto query_port = real_function<int (*)(ibv_context*, uint8_t, ibv_port_attr*)>(g_real_query_port);
  auto query_gid = real_function<int (*)(ibv_context*, uint8_t, int, ibv_gid*)>(g_real_query_gid);
  if (!query_device || !query_port) return;
  ibv_device_attr dattr{};
  if (query_device(ctx, &dattr) != 0) return;
  for (uint32_t port = 1; port <= dattr.phys_port_cnt && port <= kMaxPorts; ++port) {
    ibv_port_attr pattr{};
    if (query_port(ctx, static_cast<uint8_t>(port), &pattr) != 0) continue;
    ibv_gid gid{};
    if (!query_gid || query_gid(ctx, static_cast<uint8_t>(port), 0, &gid) != 0) gid = ibv_gid{};
    if (c) c->lid[port] = pattr.lid;
    if (control_events())
      record<EventType::ibv_port_info>(reinterpret_cast<uintptr_t>(ctx), uint64_t{port}, uint64_t{pattr.lid}, gid_subnet_prefix(gid),
             gid_interface_id(gid), uint64_t{pattr.link_layer}, static_cast<uint64_t>(pattr.active_mtu), static_cast<uint64_t>(pattr.state));
  }
}

}  // namespace

void on_device_opened(ibv_context* ctx, ibv_device* dev) {
  ContextState* c = patch_context(ctx);
  if (control_events()) {
    auto guid_of = real_function<__be64 (*)(ibv_device*)>(g_real_get_device_guid);
    uint64_t guid = guid_of && dev ? be64toh(guid_of(dev)) : 0;
    const char* name = dev ? dev->name : "";
    uint64_t words[2] = {reinterpret_cast<uintptr_t>(ctx), guid};
    record_with_bytes<EventType::ibv_device_open>(words, name, static_cast<uint32_t>(strnlen(name, sizeof dev->name)));
  }
  record_ports(ctx, c);
}

void on_qp_created(ibv_qp* qp, ibv_pd* pd, const ibv_qp_cap& cap, uint32_t qp_type, ibv_cq* send_cq, ibv_cq* recv_cq, ibv_srq* srq,
                   bool extended) {
  QpState* s = track_qp(qp);
  if (extended && s) patch_qp_ex(s, real_qp_to_qp_ex(qp));
  if (control_events())
    record<EventType::ibv_qp_create>(reinterpret_cast<uintptr_t>(qp->context), reinterpret_cast<uintptr_t>(pd), reinterpret_cast<uintptr_t>(qp),
           uint64_t{qp->qp_num}, uint64_t{qp_type}, reinterpret_cast<uintptr_t>(send_cq), reinterpret_cast<uintptr_t>(recv_cq),
           reinterpret_cast<uintptr_t>(srq), uint64_t{cap.max_send_wr}, uint64_t{cap.max_recv_wr}, uint64_t{cap.max_inline_data});
}

void on_qp_modified(ibv_qp* qp, const ibv_qp_attr* attr, int mask) {
  QpState* s = track_qp(qp);
  if (s) {
    if (mask & IBV_QP_PORT) {
      s->port = attr->port_num;
      uint16_t lid = s->context && attr->port_num <= kMaxPorts ? s->context->lid[attr->port_num] : 0;
      s->local_endpoint = (uint64_t{lid} << 32) | qp->qp_num;
    }
    if ((mask & IBV_QP_AV) && (mask & IBV_QP_DEST_QPN)) {
      s->remote_endpoint = (uint64_t{attr->ah_attr.dlid} << 32) | attr->dest_qp_num;
      // Aggregate mode writes no QP events: an (empty) endpoint-pair counter made now names the
      // connection even when this side never sends (an ib_write_bw server), so the analysis can
      // still pair it with its peer.
      if (!control_events()) {
        AggregateTable* tab = t_state.aggregate ? t_state.aggregate : attach_aggregate_slow();
        if (tab) tab->entry(static_cast<uint64_t>(format::AggregateKey::ibv_endpoint_pair), s->local_endpoint, s->remote_endpoint);
      }
    }
    endpoints_changed();
    // Providers rewrite wr_* pointers on state changes (mlx5: wr_complete at RESET/RTS).
    if (s->qpx) patch_qp_ex(s, s->qpx);
  }
  if (!control_events()) return;
  const bool av = mask & IBV_QP_AV;
  const bool global = av && attr->ah_attr.is_global;
  record<EventType::ibv_qp_modify>(uint64_t{qp->qp_num}, static_cast<uint64_t>(mask),
         (mask & IBV_QP_STATE) ? static_cast<uint64_t>(attr->qp_state) : uint64_t{qp->state},
         (mask & IBV_QP_PORT) ? uint64_t{attr->port_num} : uint64_t{s ? s->port : 0u},
         (mask & IBV_QP_DEST_QPN) ? uint64_t{attr->dest_qp_num} : 0, av ? uint64_t{attr->ah_attr.dlid} : 0,
         global ? gid_subnet_prefix(attr->ah_attr.grh.dgid) : 0, global ? gid_interface_id(attr->ah_attr.grh.dgid) : 0,
         (mask & IBV_QP_SQ_PSN) ? uint64_t{attr->sq_psn} : 0, (mask & IBV_QP_RQ_PSN) ? uint64_t{attr->rq_psn} : 0,
         (mask & IBV_QP_PATH_MTU) ? static_cast<uint64_t>(attr->path_mtu) : 0);
}

void on_cq_created(ibv_context* ctx, ibv_cq* cq, int cqe) {
  if (control_events()) record<EventType::ibv_cq_create>(reinterpret_cast<uintptr_t>(ctx), reinterpret_cast<uintptr_t>(cq), static_cast<uint64_t>(cqe));
}

void on_cq_ex_created(ibv_context* ctx, ibv_cq_ex* cq, int cqe, uint64_t wc_flags) {
  patch_cq_ex(cq, wc_flags);
  on_cq_created(ctx, ibv_cq_ex_to_cq(cq), cqe);
}

void on_srq_created(ibv_pd* pd, ibv_srq* srq, uint32_t max_wr) {
  if (control_events()) record<EventType::ibv_srq_create>(reinterpret_cast<uintptr_t>(pd), reinterpret_cast<uintptr_t>(srq), uint64_t{max_wr});
}

namespace {
bool init_ibverbs(const Config& config, std::string*) {
  g_mode = config.mode;
  return true;
}
}  // namespace

}  // namespace ibv

extern const InterposedSymbolTable kIbverbsInterposedSymbols;  // ibverbs_symbols.cpp
extern const Provider kIbverbsProvider = {"ibverbs", "libibverbs: objects, QP state changes, posted work requests, completions, errors",
                                          &ibv::init_ibverbs, &ibv::g_active, &kIbverbsInterposedSymbols};

}  // namespace sigmatrace::profiler

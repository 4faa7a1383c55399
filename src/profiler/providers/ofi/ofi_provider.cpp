// The "ofi" provider (libfabric). libfabric exports only fi_getinfo/fi_fabric and a few helpers;
// every other call (fi_domain, fi_endpoint, fi_send, fi_cq_read, ...) is a static inline through
// an ops table of the object it is called on. So fi_getinfo and fi_fabric are shimmed, and each
// object opened below a traced fabric gets its ops-table pointers replaced by pointers to copies
// whose entries are wrappers: fabric (domain, passive_ep, eq_open), domain (endpoint, cq_open,
// av_open, cntr_open, mr reg), endpoint (msg, tagged, rma, atomic, cm), CQ (read/readfrom/readerr/
// sread), AV (insert), EQ (read/sread), passive endpoint (cm).
//
// Provider tables are shared, read-only statics; a copy is made once per distinct table (and CQ
// format) on the control path and never freed. A wrapper finds the real table from the copy it was
// called through (the copy is the first member of a struct holding the real pointer), so the data
// path does no lookup. Objects libfabric opens internally (ofi_rxm's core tcp endpoints) are not
// below a traced object and stay untouched: no double counting.
//
// Data-path wrappers run on application threads: no locks, no system calls, no allocation.
// -kFiEagain (back-pressure, the caller retries) is not recorded; other failures always are.
#include <dlfcn.h>

#include <cstring>
#include <mutex>

#include "format/event_types.h"
#include "profiler/providers/dl_resolver_hooks.h"
#include "profiler/providers/ofi/ofi_abi.h"
#include "profiler/providers/provider.h"
#include "profiler/runtime/log.h"
#include "profiler/runtime/recorder.h"
#include "profiler/providers/ofi/ofi_internal.h"

namespace sigmatrace::profiler::ofi {
namespace {

// ---- control path: addresses, connections, events ------------------------------------------------------

void record_address(const void* object, OfiAddressKind kind, const void* a, size_t len) {
  if (!active() || !control_events() || !a) return;
  const uint64_t words[2] = {addr(object), static_cast<uint64_t>(kind)};
  record_with_bytes<EventType::ofi_ep_address>(words, a, static_cast<uint32_t>(len > kMaxRecordedAddress ? kMaxRecordedAddress : len));
}

int cm_getname(fid* f, void* a, size_t* len) {
  // fid_ep and fid_pep both keep the cm table at offset 32
  static_assert(offsetof(fid_ep, cm) == offsetof(fid_pep, cm));
  const fi_ops_cm* table = reinterpret_cast<fid_ep*>(f)->cm;
  int r = wrapped(table).real->getname(f, a, len);
  if (r == 0 && len) record_address(f, OfiAddressKind::local, a, *len);
  return r;
}
int cm_getpeer(fid_ep* ep, void* a, size_t* len) {
  int r = wrapped(ep->cm).real->getpeer(ep, a, len);
  if (r == 0 && len) record_address(ep, OfiAddressKind::peer, a, *len);
  return r;
}
int cm_connect(fid_ep* ep, const void* a, const void* param, size_t paramlen) {
  int r = wrapped(ep->cm).real->connect(ep, a, param, paramlen);
  if (r == 0 && a) record_address(ep, OfiAddressKind::peer_connect, a, address_bytes(a, g_address_lengths.get(ep)));
  else if (active()) call_error(OfiOp::connect, ep, r);
  return r;
}
int cm_accept(fid_ep* ep, const void* param, size_t paramlen) {
  int r = wrapped(ep->cm).real->accept(ep, param, paramlen);
  if (r != 0 && active()) call_error(OfiOp::accept, ep, r);
  return r;
}
int cm_listen(fid_pep* pep) {
  int r = wrapped(pep->cm).real->listen(pep);
  if (r != 0 && active()) call_error(OfiOp::listen, pep, r);
  return r;
}
void fill_cm(fi_ops_cm& c, const fi_ops_cm& r) {
  WRAP_ENTRY(c, r, fi_ops_cm, getname, cm_getname)
  WRAP_ENTRY(c, r, fi_ops_cm, getpeer, cm_getpeer)
  WRAP_ENTRY(c, r, fi_ops_cm, connect, cm_connect)
  WRAP_ENTRY(c, r, fi_ops_cm, accept, cm_accept)
  WRAP_ENTRY(c, r, fi_ops_cm, listen, cm_listen)
}

int av_insert(fid_av* av, const void* a, size_t count, fi_addr_t* fi_addr, uint64_t flags, void* ctx) {
  int r = wrapped(av->ops).real->insert(av, a, count, fi_addr, flags, ctx);
  if (!active()) return r;
  if (r < 0) {
    call_error(OfiOp::av_insert, av, r);
  } else if (control_events() && a) {
    const size_t shape = g_address_lengths.get(av);
    const auto* p = static_cast<const uint8_t*>(a);
    for (size_t i = 0; i < count && i < 256; ++i) {
      const size_t len = shape ? address_bytes(p, shape) : 0;  // string addresses follow each other
      const uint64_t words[3] = {addr(av), uint64_t{i}, fi_addr ? fi_addr[i] : ~uint64_t{0}};
      record_with_bytes<EventType::ofi_av_insert>(words, len ? p : nullptr,
                        static_cast<uint32_t>(len > kMaxRecordedAddress ? kMaxRecordedAddress : len));
      p += len;
    }
  }
  return r;
}
void fill_av(fi_ops_av& c, const fi_ops_av& r) { WRAP_ENTRY(c, r, fi_ops_av, insert, av_insert) }

void eq_event(const fid_eq* eq, ssize_t r, const uint32_t* event, const void* buf) {
  if (r <= 0 || !event || !active() || !control_events()) return;
  const auto* e = static_cast<const fi_eq_entry*>(buf);
  record<EventType::ofi_eq_event>(addr(eq), uint64_t{*event}, e ? addr(e->fid) : 0);
}
ssize_t eq_read(fid_eq* eq, uint32_t* event, void* buf, size_t len, uint64_t flags) {
  ssize_t r = wrapped(eq->ops).real->read(eq, event, buf, len, flags);
  eq_event(eq, r, event, buf);
  return r;
}
ssize_t eq_sread(fid_eq* eq, uint32_t* event, void* buf, size_t len, int timeout, uint64_t flags) {
  ssize_t r = wrapped(eq->ops).real->sread(eq, event, buf, len, timeout, flags);
  eq_event(eq, r, event, buf);
  return r;
}
void fill_eq(fi_ops_eq& c, const fi_ops_eq& r) {
  WRAP_ENTRY(c, r, fi_ops_eq, read, eq_read)
  WRAP_ENTRY(c, r, fi_ops_eq, sread, eq_sread)
}

// ---- objects ---------------------------------------------------------------------------------------------

template <typename Ops, uint32_t kMax>
void swap_table(Ops** slot, TableCopies<Ops, kMax>& copies, void (*fill)(Ops&, const Ops&), int extra = 0) {
  if (Ops* w = copies.wrap(*slot, extra, fill)) *slot = w;
}

const char* provider_name(const fi_info* info) {
  return info && info->fabric_attr && info->fabric_attr->prov_name ? info->fabric_attr->prov_name : "";
}

void endpoint_opened(fid_domain* domain, fi_info* info, fid_ep* ep) {
  swap_table(&ep->msg, g_msg_tables, &fill_msg);
  swap_table(&ep->tagged, g_tagged_tables, &fill_tagged);
  swap_table(&ep->rma, g_rma_tables, &fill_rma);
  swap_table(&ep->atomic, g_atomic_tables, &fill_atomic);
  swap_table(&ep->cm, g_cm_tables, &fill_cm);
  size_t len = address_length(info);
  g_address_lengths.set(ep, len ? len : g_address_lengths.get(domain));
  if (!control_events()) return;
  const char* prov = provider_name(info);
  const uint64_t words[4] = {addr(domain), addr(ep), info && info->ep_attr ? static_cast<uint64_t>(info->ep_attr->type) : 0,
                             info ? info->caps : 0};
  record_with_bytes<EventType::ofi_ep_open>(words, prov, static_cast<uint32_t>(strlen(prov)));
  // An endpoint accepted from a connection request knows its peer from the request's info.
  if (info && info->dest_addr && info->dest_addrlen) record_address(ep, OfiAddressKind::peer, info->dest_addr, info->dest_addrlen);
}

// The one body of a control-path hook: the real call's result, then `opened()` on success or an
// error record on failure (nothing while the provider is off).
template <typename Opened>
inline int control_call(int r, OfiOp op, const void* object, Opened&& opened) {
  if (!active()) return r;
  if (r == 0) opened();
  else call_error(op, object, r);
  return r;
}

void object_opened(OfiObject kind, const void* parent, const void* object, uint64_t attr) {
  if (control_events()) record<EventType::ofi_object_open>(static_cast<uint64_t>(kind), addr(parent), addr(object), attr);
}

int dom_endpoint(fid_domain* d, fi_info* info, fid_ep** ep, void* ctx) {
  return control_call(wrapped(d->ops).real->endpoint(d, info, ep, ctx), OfiOp::endpoint, d,
                      [&] { endpoint_opened(d, info, *ep); });
}
int dom_endpoint2(fid_domain* d, fi_info* info, fid_ep** ep, uint64_t flags, void* ctx) {
  return control_call(wrapped(d->ops).real->endpoint2(d, info, ep, flags, ctx), OfiOp::endpoint, d,
                      [&] { endpoint_opened(d, info, *ep); });
}
int dom_scalable_ep(fid_domain* d, fi_info* info, fid_ep** ep, void* ctx) {
  return control_call(wrapped(d->ops).real->scalable_ep(d, info, ep, ctx), OfiOp::endpoint, d,
                      [&] { object_opened(OfiObject::scalable_ep, d, *ep, 0); });
}
int dom_cq_open(fid_domain* d, void* attr, fid_cq** cq, void* ctx) {
  return control_call(wrapped(d->ops).real->cq_open(d, attr, cq, ctx), OfiOp::cq_open, d, [&] {
    const int format = attr ? static_cast<const fi_cq_attr*>(attr)->format : 0;
    swap_table(&(*cq)->ops, g_cq_tables, &fill_cq, format);
    object_opened(OfiObject::cq, d, *cq, static_cast<uint64_t>(format));
  });
}
int dom_av_open(fid_domain* d, void* attr, fid_av** av, void* ctx) {
  return control_call(wrapped(d->ops).real->av_open(d, attr, av, ctx), OfiOp::av_open, d, [&] {
    swap_table(&(*av)->ops, g_av_tables, &fill_av);
    g_address_lengths.set(*av, g_address_lengths.get(d));
    object_opened(OfiObject::av, d, *av, 0);
  });
}
int dom_cntr_open(fid_domain* d, void* attr, fid_cntr** cntr, void* ctx) {
  return control_call(wrapped(d->ops).real->cntr_open(d, attr, cntr, ctx), OfiOp::cntr_open, d,
                      [&] { object_opened(OfiObject::cntr, d, *cntr, 0); });
}
void fill_domain(fi_ops_domain& c, const fi_ops_domain& r) {
  WRAP_ENTRY(c, r, fi_ops_domain, endpoint, dom_endpoint)
  WRAP_ENTRY(c, r, fi_ops_domain, endpoint2, dom_endpoint2)
  WRAP_ENTRY(c, r, fi_ops_domain, scalable_ep, dom_scalable_ep)
  WRAP_ENTRY(c, r, fi_ops_domain, cq_open, dom_cq_open)
  WRAP_ENTRY(c, r, fi_ops_domain, av_open, dom_av_open)
  WRAP_ENTRY(c, r, fi_ops_domain, cntr_open, dom_cntr_open)
}

void mr_done(fid* domain, int r, fid_mr** mr, const void* buf, uint64_t len, uint64_t access) {
  if (!active()) return;
  if (r != 0) call_error(OfiOp::mr_reg, domain, r);
  else if (control_events() && mr && *mr)
    record<EventType::ofi_mr_reg>(addr(domain), addr(*mr), addr(buf), len, access, (*mr)->key);
}
// The domain's fid is what fi_mr_reg passes; its mr table is found through the fid_domain.
int mr_reg(fid* f, const void* buf, size_t len, uint64_t access, uint64_t offset, uint64_t key, uint64_t flags, fid_mr** mr, void* ctx) {
  int r = wrapped(reinterpret_cast<fid_domain*>(f)->mr).real->reg(f, buf, len, access, offset, key, flags, mr, ctx);
  mr_done(f, r, mr, buf, len, access);
  return r;
}
int mr_regv(fid* f, const iovec* iov, size_t count, uint64_t access, uint64_t offset, uint64_t key, uint64_t flags, fid_mr** mr,
            void* ctx) {
  int r = wrapped(reinterpret_cast<fid_domain*>(f)->mr).real->regv(f, iov, count, access, offset, key, flags, mr, ctx);
  mr_done(f, r, mr, count ? iov[0].iov_base : nullptr, iov_bytes(iov, count), access);
  return r;
}
int mr_regattr(fid* f, const void* attr, uint64_t flags, fid_mr** mr) {
  int r = wrapped(reinterpret_cast<fid_domain*>(f)->mr).real->regattr(f, attr, flags, mr);
  struct MrAttr {
    const iovec* mr_iov;
    size_t iov_count;
    uint64_t access;
  };
  const auto* a = static_cast<const MrAttr*>(attr);
  mr_done(f, r, mr, a && a->iov_count ? a->mr_iov[0].iov_base : nullptr, a ? iov_bytes(a->mr_iov, a->iov_count) : 0, a ? a->access : 0);
  return r;
}
void fill_mr(fi_ops_mr& c, const fi_ops_mr& r) {
  WRAP_ENTRY(c, r, fi_ops_mr, reg, mr_reg)
  WRAP_ENTRY(c, r, fi_ops_mr, regv, mr_regv)
  WRAP_ENTRY(c, r, fi_ops_mr, regattr, mr_regattr)
}

void domain_opened(fid_fabric* fabric, fi_info* info, fid_domain* d) {
  g_address_lengths.set(d, address_length(info));
  swap_table(&d->ops, g_domain_tables, &fill_domain);
  swap_table(&d->mr, g_mr_tables, &fill_mr);
  if (!control_events()) return;
  const char* name = info && info->domain_attr && info->domain_attr->name ? info->domain_attr->name : "";
  const uint64_t words[2] = {addr(fabric), addr(d)};
  record_with_bytes<EventType::ofi_domain_open>(words, name, static_cast<uint32_t>(strlen(name)));
}

int fab_domain(fid_fabric* f, fi_info* info, fid_domain** d, void* ctx) {
  return control_call(wrapped(f->ops).real->domain(f, info, d, ctx), OfiOp::domain, f,
                      [&] { domain_opened(f, info, *d); });
}
int fab_domain2(fid_fabric* f, fi_info* info, fid_domain** d, uint64_t flags, void* ctx) {
  return control_call(wrapped(f->ops).real->domain2(f, info, d, flags, ctx), OfiOp::domain, f,
                      [&] { domain_opened(f, info, *d); });
}
int fab_passive_ep(fid_fabric* f, fi_info* info, fid_pep** pep, void* ctx) {
  return control_call(wrapped(f->ops).real->passive_ep(f, info, pep, ctx), OfiOp::passive_ep, f, [&] {
    swap_table(&(*pep)->cm, g_cm_tables, &fill_cm);
    g_address_lengths.set(*pep, address_length(info));
    object_opened(OfiObject::passive_ep, f, *pep, 0);
  });
}
int fab_eq_open(fid_fabric* f, void* attr, fid_eq** eq, void* ctx) {
  return control_call(wrapped(f->ops).real->eq_open(f, attr, eq, ctx), OfiOp::eq_open, f, [&] {
    swap_table(&(*eq)->ops, g_eq_tables, &fill_eq);
    object_opened(OfiObject::eq, f, *eq, 0);
  });
}
void fill_fabric(fi_ops_fabric& c, const fi_ops_fabric& r) {
  WRAP_ENTRY(c, r, fi_ops_fabric, domain, fab_domain)
  WRAP_ENTRY(c, r, fi_ops_fabric, domain2, fab_domain2)
  WRAP_ENTRY(c, r, fi_ops_fabric, passive_ep, fab_passive_ep)
  WRAP_ENTRY(c, r, fi_ops_fabric, eq_open, fab_eq_open)
}

bool init_ofi(const Config& config, std::string*) {
  g_mode = config.mode;
  return true;
}

RealSymbol g_real_getinfo{"fi_getinfo", "libfabric.so.1", {}, {}};
RealSymbol g_real_fabric{"fi_fabric", "libfabric.so.1", {}, {}};

}  // namespace
}  // namespace sigmatrace::profiler::ofi

namespace sigmatrace::profiler {
extern const InterposedSymbolTable kOfiInterposedSymbols;  // below
extern const InterposedSymbolTable kOfiInterposedSymbols;  // at the end of this file
extern const Provider kOfiProvider = {"ofi", "libfabric: fi_getinfo/fi_fabric and the ops tables of every object below them",
                                      &ofi::init_ofi, &ofi::g_active, &kOfiInterposedSymbols};
}  // namespace sigmatrace::profiler

using namespace sigmatrace::profiler;
using namespace sigmatrace::profiler::ofi;
using namespace sigmatrace::profiler::ofi::abi;

// fi_getinfo@@FABRIC_1.3 and fi_fabric@@FABRIC_1.1 (the default versions; plain dlsym finds them).
SIGMATRACE_EXPORT int fi_getinfo(uint32_t version, const char* node, const char* service, uint64_t flags, const fi_info* hints,
                                 fi_info** info) {
  auto fn = real_function<int (*)(uint32_t, const char*, const char*, uint64_t, const fi_info*, fi_info**)>(g_real_getinfo);
  if (!fn) return -38;  // -FI_ENOSYS
  Reentry guard;
  int r = fn(version, node, service, flags, hints, info);
  if (!guard.outer || !active()) return r;
  if (r != 0) {
    call_error(OfiOp::getinfo, nullptr, r);
  } else if (control_events() && info && *info) {
    uint64_t n = 0;
    for (const fi_info* i = *info; i; i = i->next) ++n;
    const char* prov = provider_name(*info);
    const uint64_t words[2] = {static_cast<uint64_t>(int64_t{r}), n};
    record_with_bytes<EventType::ofi_getinfo>(words, prov, static_cast<uint32_t>(strlen(prov)));
  }
  return r;
}

SIGMATRACE_EXPORT int fi_fabric(fi_fabric_attr* attr, fid_fabric** fabric, void* context) {
  auto fn = real_function<int (*)(fi_fabric_attr*, fid_fabric**, void*)>(g_real_fabric);
  if (!fn) return -38;
  Reentry guard;
  int r = fn(attr, fabric, context);
  if (!guard.outer || !active()) return r;
  if (r != 0) {
    call_error(OfiOp::fabric, nullptr, r);
    return r;
  }
  swap_table(&(*fabric)->ops, g_fabric_tables, &fill_fabric);
  if (control_events()) {
    const char* prov = attr && attr->prov_name ? attr->prov_name : "";
    const uint64_t words[2] = {addr(*fabric), 0};
    record_with_bytes<EventType::ofi_fabric_open>(words, prov, static_cast<uint32_t>(strlen(prov)));
  }
  return r;
}

namespace sigmatrace::profiler {
namespace {
// For the dlsym/dlvsym hooks (dl_resolver_hooks.cpp); only the default symbol versions are wrapped.
const InterposedSymbol kOfiSymbols[] = {
    {&ofi::g_real_getinfo, reinterpret_cast<void*>(&::fi_getinfo), &ofi::g_active},
    {&ofi::g_real_fabric, reinterpret_cast<void*>(&::fi_fabric), &ofi::g_active},
};
// Only the default versions are wrapped: fi_getinfo@@FABRIC_1.3, fi_fabric@@FABRIC_1.1.
bool is_ofi_compat(const char* name, const char* version) {
  if (std::strncmp(version, "FABRIC_", 7) != 0) return false;
  return !((std::strcmp(name, "fi_getinfo") == 0 && std::strcmp(version, "FABRIC_1.3") == 0) ||
           (std::strcmp(name, "fi_fabric") == 0 && std::strcmp(version, "FABRIC_1.1") == 0));
}
}  // namespace
extern const InterposedSymbolTable kOfiInterposedSymbols = {kOfiSymbols, sizeof kOfiSymbols / sizeof kOfiSymbols[0], &is_ofi_compat};
}  // namespace sigmatrace::profiler

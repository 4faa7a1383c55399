// What the ofi provider's files share (ofi_provider.cpp: fi_getinfo/fi_fabric, the control path
// and the objects whose ops tables are swapped; ofi_data_path.cpp: the data-path wrappers and the
// completion queues): whether tracing is on, the table copies each object's ops point to, the
// address lengths of objects. Internal to the provider.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstring>
#include <mutex>

#include "format/event_types.h"
#include "profiler/providers/ofi/ofi_abi.h"
#include "profiler/providers/provider.h"
#include "profiler/runtime/log.h"
#include "profiler/runtime/recorder.h"

namespace sigmatrace::profiler::ofi {

using namespace abi;
using format::AggregateKey;
using format::EventType;
using format::OfiAddressKind;
using format::OfiObject;
using format::OfiOp;

inline std::atomic<bool> g_active{false};
inline TraceMode g_mode = TraceMode::simple;

inline bool active() { return g_active.load(std::memory_order_relaxed); }
inline bool control_events() { return g_mode != TraceMode::aggregate; }
inline uint64_t addr(const void* p) { return reinterpret_cast<uintptr_t>(p); }

// The length of the addresses an object takes (fi_av_insert, fi_connect): a domain's and an
// endpoint's from the fi_info they were opened with, an address vector's from its domain. One
// process may use several address formats (tcp's sockaddr, shm's names), so the length belongs
// to the object; 0 (unknown) records no bytes rather than read past the caller's buffer, and
// kStringAddresses marks FI_ADDR_STR, whose addresses are NUL-terminated strings of any length.
// Control path: written once per object, read by a scan from the newest (addresses are reused).
class AddressLengths {
 public:
  void set(const void* object, size_t len) {
    if (!object || !len) return;
    uint32_t i = n_.fetch_add(1, std::memory_order_relaxed);
    if (i >= kMax) return;  // beyond it, addresses are recorded without their bytes
    len_[i] = len;
    key_[i].store(addr(object), std::memory_order_release);
  }
  size_t get(const void* object) const {
    uint32_t n = n_.load(std::memory_order_relaxed);
    for (uint32_t i = n < kMax ? n : kMax; i-- > 0;)
      if (key_[i].load(std::memory_order_acquire) == addr(object)) return len_[i];
    return 0;
  }

 private:
  static constexpr uint32_t kMax = 4096;
  std::atomic<uintptr_t> key_[kMax] = {};
  size_t len_[kMax] = {};
  std::atomic<uint32_t> n_{0};
};
inline AddressLengths g_address_lengths;
inline constexpr size_t kStringAddresses = ~size_t{0};
inline constexpr size_t kMaxRecordedAddress = 4096;

// The address length an fi_info describes: its format's, else its addresses' own.
inline size_t address_length(const fi_info* info) {
  if (!info) return 0;
  switch (info->addr_format) {
    case FI_SOCKADDR_IN: return 16;   // struct sockaddr_in
    case FI_SOCKADDR_IN6: return 28;  // struct sockaddr_in6
    case FI_ADDR_STR: return kStringAddresses;
    default: return info->src_addrlen > info->dest_addrlen ? info->src_addrlen : info->dest_addrlen;
  }
}

// The length of the address at a, for an object whose addresses have length `shape`.
inline size_t address_bytes(const void* a, size_t shape) {
  if (shape != kStringAddresses) return shape;
  return strnlen(static_cast<const char*>(a), kMaxRecordedAddress - 1) + 1;
}

using Reentry = kit::Reentry<struct OfiCalls>;

inline void call_error(OfiOp call, const void* object, int64_t error) {
  record<EventType::ofi_call_error>(static_cast<uint64_t>(call), addr(object), error);
}

// ---- table copies ------------------------------------------------------------------------------------

template <typename Ops>
struct Wrapped {
  Ops ops;          // first member: the object's table pointer points here
  const Ops* real;  // the provider's table
  int extra;        // CQ format
};

template <typename Ops, uint32_t kMax>
struct TableCopies {
  Wrapped<Ops> entries[kMax];
  uint32_t count = 0;
  std::mutex mu;  // control path only

  bool owns(const void* p) const { return p >= static_cast<const void*>(entries) && p < static_cast<const void*>(entries + kMax); }

  // The copy of `real` with fill()'s wrappers, made once per (real, extra). Null when full.
  Ops* wrap(const Ops* real, int extra, void (*fill)(Ops& copy, const Ops& real)) {
    if (!real || owns(real)) return nullptr;
    std::lock_guard<std::mutex> lock(mu);
    for (uint32_t i = 0; i < count; ++i)
      if (entries[i].real == real && entries[i].extra == extra) return &entries[i].ops;
    if (count == kMax) {
      log_line("ofi: more than %u distinct ops tables; further objects are not traced", kMax);
      return nullptr;
    }
    Wrapped<Ops>& w = entries[count];
    std::memset(&w.ops, 0, sizeof w.ops);
    const size_t n = real->size < sizeof(Ops) ? real->size : sizeof(Ops);
    std::memcpy(&w.ops, real, n);
    w.ops.size = n;  // never advertise entries beyond what was copied
    w.real = real;
    w.extra = extra;
    fill(w.ops, *real);
    __atomic_store_n(&count, count + 1, __ATOMIC_RELEASE);
    return &w.ops;
  }
};

template <typename Ops>
[[gnu::always_inline]] inline const Wrapped<Ops>& wrapped(const Ops* table) {
  return *reinterpret_cast<const Wrapped<Ops>*>(table);
}

// An entry present in the provider's table (inside its advertised size and non-null) is replaced.
#define WRAP_ENTRY(copy, real, Ops, entry, wrapper) \
  if (offsetof(Ops, entry) < (copy).size && (real).entry) (copy).entry = &wrapper;

inline TableCopies<fi_ops_fabric, 32> g_fabric_tables;
inline TableCopies<fi_ops_domain, 32> g_domain_tables;
inline TableCopies<fi_ops_mr, 32> g_mr_tables;
inline TableCopies<fi_ops_msg, 64> g_msg_tables;
inline TableCopies<fi_ops_tagged, 64> g_tagged_tables;
inline TableCopies<fi_ops_rma, 64> g_rma_tables;
inline TableCopies<fi_ops_atomic, 64> g_atomic_tables;
inline TableCopies<fi_ops_cm, 64> g_cm_tables;
inline TableCopies<fi_ops_cq, 64> g_cq_tables;
inline TableCopies<fi_ops_av, 32> g_av_tables;
inline TableCopies<fi_ops_eq, 32> g_eq_tables;

// The bytes an I/O vector describes (operations and memory registrations).
inline uint64_t iov_bytes(const iovec* iov, size_t n) {
  uint64_t b = 0;
  for (size_t i = 0; iov && i < n; ++i) b += iov[i].iov_len;
  return b;
}

// The data path's wrappers, put into a table copy (ofi_data_path.cpp).
void fill_msg(fi_ops_msg& c, const fi_ops_msg& r);
void fill_tagged(fi_ops_tagged& c, const fi_ops_tagged& r);
void fill_rma(fi_ops_rma& c, const fi_ops_rma& r);
void fill_atomic(fi_ops_atomic& c, const fi_ops_atomic& r);
void fill_cq(fi_ops_cq& c, const fi_ops_cq& r);

}  // namespace sigmatrace::profiler::ofi

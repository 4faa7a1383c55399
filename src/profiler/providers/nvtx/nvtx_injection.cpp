// The "nvtx" provider: the profiler is NVTX's injection library (NVTX_INJECTION64_PATH names
// libsigmatrace.so; `sigmatrace profile` sets it). NVTX calls InitializeInjectionNvtx2 once per
// copy of NVTX in the process (each library carries its own), and the profiler writes its
// functions into that copy's slots: marks, push/pop and start/end ranges, domains, registered
// strings, categories, thread names, and the payload extension's schemas and payloads (NCCL
// describes each collective that way). Every call records on the calling thread: ranges and marks
// on the hot path (no lock, no allocation), registrations on the control path. A program whose
// NVTX_INJECTION64_PATH names another tool (Nsight Systems) is left to it; the provider is then
// disabled and the trace says why.
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <atomic>
#include <cstdio>
#include <cwchar>
#include <mutex>

#include "profiler/providers/nvtx/nvtx_abi.h"
#include "profiler/providers/nvtx/nvtx_ranges.h"
#include "profiler/providers/provider.h"
#include "profiler/runtime/recorder.h"

namespace sigmatrace::profiler {

std::atomic<bool> g_nvtx_active{false};

namespace nvtx {
namespace {

using format::EventType;
using format::NvtxKind;

bool g_aggregate = false;
std::atomic<uint64_t> g_next_range{1};
std::atomic<uint64_t> g_next_handle{1};  // domains and registered strings: small numbers, never 0
thread_local int t_depth __attribute__((tls_model("initial-exec"))) = 0;

bool on() { return g_nvtx_active.load(std::memory_order_relaxed) && !g_aggregate; }
uint64_t handle_value(const void* h) { return reinterpret_cast<uintptr_t>(h); }
void* new_handle() { return reinterpret_cast<void*>(g_next_handle.fetch_add(1, std::memory_order_relaxed)); }

// A wide string as UTF-8 in buf (cut at the buffer's end); returns its length.
size_t to_utf8(const wchar_t* w, char* buf, size_t cap) {
  size_t n = 0;
  for (; w && *w; ++w) {
    const uint32_t c = static_cast<uint32_t>(*w);
    const size_t need = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
    if (n + need > cap) break;
    if (need == 1) buf[n++] = static_cast<char>(c);
    else if (need == 2) buf[n++] = static_cast<char>(0xc0 | c >> 6), buf[n++] = static_cast<char>(0x80 | (c & 0x3f));
    else if (need == 3)
      buf[n++] = static_cast<char>(0xe0 | c >> 12), buf[n++] = static_cast<char>(0x80 | ((c >> 6) & 0x3f)),
      buf[n++] = static_cast<char>(0x80 | (c & 0x3f));
    else
      buf[n++] = static_cast<char>(0xf0 | c >> 18), buf[n++] = static_cast<char>(0x80 | ((c >> 12) & 0x3f)),
      buf[n++] = static_cast<char>(0x80 | ((c >> 6) & 0x3f)), buf[n++] = static_cast<char>(0x80 | (c & 0x3f));
  }
  return n;
}

size_t bounded_length(const char* s) { return s ? strnlen(s, format::kNvtxMessageBytes) : 0; }

void record_payloads(const PayloadData* data, size_t count) {
  for (size_t i = 0; data && i < count && i < 8; ++i) {
    const size_t kept = data[i].payload ? std::min<size_t>(data[i].size, format::kNvtxPayloadBytes) : 0;
    const uint64_t words[] = {data[i].schema_id, uint64_t{data[i].size}};
    record_with_bytes<EventType::nvtx_payload>(words, data[i].payload, kept);
  }
}

// One range begun or mark, with its attributes (null: a plain message, given as text).
void begin(const void* domain, NvtxKind kind, uint64_t range_id, const EventAttributes* a, const char* text, size_t len,
           const PayloadData* ext, size_t ext_count) {
  uint64_t category = 0, color = 0, payload_type = 0, payload = 0, handle = 0;
  char wide[format::kNvtxMessageBytes];
  if (a) {
    const size_t size = a->size;
    if (size >= offsetof(EventAttributes, color_type)) category = a->category;
    if (size >= offsetof(EventAttributes, payload_type) && a->color_type == 1) color = a->color;
    if (size >= offsetof(EventAttributes, message_type)) {
      payload_type = static_cast<uint32_t>(a->payload_type), payload = a->payload;
      if (a->payload_type == kPayloadTypeExt)
        ext = reinterpret_cast<const PayloadData*>(static_cast<uintptr_t>(a->payload)), ext_count = static_cast<uint32_t>(a->reserved0);
    }
    if (size >= sizeof(EventAttributes) && a->message) {
      if (a->message_type == kMessageAscii) text = static_cast<const char*>(a->message), len = bounded_length(text);
      else if (a->message_type == kMessageUnicode) text = wide, len = to_utf8(static_cast<const wchar_t*>(a->message), wide, sizeof wide);
      else if (a->message_type == kMessageRegistered) handle = handle_value(a->message);
    }
  }
  const uint64_t words[] = {handle_value(domain), static_cast<uint64_t>(kind), range_id, category, color, payload_type, payload, handle};
  record_with_bytes<EventType::nvtx_begin>(words, text, len);
  record_payloads(ext, ext_count);
}

void end(const void* domain, NvtxKind kind, uint64_t range_id) {
  record<EventType::nvtx_end>(handle_value(domain), static_cast<uint64_t>(kind), range_id);
}

}  // namespace

bool recording_ranges() { return on(); }

int push(const void* domain, const EventAttributes* a, const char* text, size_t len, const PayloadData* data, size_t count) {
  const int level = t_depth++;
  if (on()) begin(domain, NvtxKind::push, 0, a, text, len, data, count);
  return level;
}
int pop(const void* domain) {
  if (t_depth == 0) return -1;  // NVTX's answer to a pop without a push
  --t_depth;
  if (on()) end(domain, NvtxKind::push, 0);
  return t_depth;
}
uint64_t start(const void* domain, const EventAttributes* a, const char* text, size_t len, const PayloadData* data, size_t count) {
  const uint64_t id = g_next_range.fetch_add(1, std::memory_order_relaxed);
  if (on()) begin(domain, NvtxKind::start, id, a, text, len, data, count);
  return id;
}
void end_range(const void* domain, uint64_t id) {
  if (on()) end(domain, NvtxKind::start, id);
}
void mark(const void* domain, const EventAttributes* a, const char* text, size_t len, const PayloadData* data, size_t count) {
  if (on()) begin(domain, NvtxKind::mark, 0, a, text, len, data, count);
}

namespace {

void name_record(EventType type, uint64_t a, uint64_t b, const char* name, size_t len) {
  if (!on()) return;
  kit::ErrnoKeeper keep;
  if (type == EventType::nvtx_category) {
    const uint64_t words[] = {a, b};
    record_with_bytes<EventType::nvtx_category>(words, name, len);
  } else if (type == EventType::nvtx_string) {
    const uint64_t words[] = {a, b};
    record_with_bytes<EventType::nvtx_string>(words, name, len);
  } else if (type == EventType::nvtx_domain) {
    const uint64_t words[] = {a};
    record_with_bytes<EventType::nvtx_domain>(words, name, len);
  } else {
    const uint64_t words[] = {a};
    record_with_bytes<EventType::nvtx_thread_name>(words, name, len);
  }
}

// --- core module ---
void mark_ex(const EventAttributes* a) { mark(nullptr, a, nullptr, 0); }
void mark_a(const char* m) { mark(nullptr, nullptr, m, bounded_length(m)); }
void mark_w(const wchar_t* m) {
  char b[format::kNvtxMessageBytes];
  mark(nullptr, nullptr, b, to_utf8(m, b, sizeof b));
}
uint64_t range_start_ex(const EventAttributes* a) { return start(nullptr, a, nullptr, 0); }
uint64_t range_start_a(const char* m) { return start(nullptr, nullptr, m, bounded_length(m)); }
uint64_t range_start_w(const wchar_t* m) {
  char b[format::kNvtxMessageBytes];
  return start(nullptr, nullptr, b, to_utf8(m, b, sizeof b));
}
void range_end(uint64_t id) { end_range(nullptr, id); }
int range_push_ex(const EventAttributes* a) { return push(nullptr, a, nullptr, 0); }
int range_push_a(const char* m) { return push(nullptr, nullptr, m, bounded_length(m)); }
int range_push_w(const wchar_t* m) {
  char b[format::kNvtxMessageBytes];
  return push(nullptr, nullptr, b, to_utf8(m, b, sizeof b));
}
int range_pop() { return pop(nullptr); }
void name_category_a(uint32_t category, const char* name) { name_record(EventType::nvtx_category, 0, category, name, bounded_length(name)); }
void name_category_w(uint32_t category, const wchar_t* name) {
  char b[format::kNvtxMessageBytes];
  name_record(EventType::nvtx_category, 0, category, b, to_utf8(name, b, sizeof b));
}
void name_os_thread_a(uint32_t tid, const char* name) { name_record(EventType::nvtx_thread_name, tid, 0, name, bounded_length(name)); }
void name_os_thread_w(uint32_t tid, const wchar_t* name) {
  char b[format::kNvtxMessageBytes];
  name_record(EventType::nvtx_thread_name, tid, 0, b, to_utf8(name, b, sizeof b));
}

// --- domain module ---
void domain_mark_ex(void* d, const EventAttributes* a) { mark(d, a, nullptr, 0); }
uint64_t domain_range_start_ex(void* d, const EventAttributes* a) { return start(d, a, nullptr, 0); }
void domain_range_end(void* d, uint64_t id) { end_range(d, id); }
int domain_range_push_ex(void* d, const EventAttributes* a) { return push(d, a, nullptr, 0); }
int domain_range_pop(void* d) { return pop(d); }
void domain_name_category_a(void* d, uint32_t category, const char* name) {
  name_record(EventType::nvtx_category, handle_value(d), category, name, bounded_length(name));
}
void domain_name_category_w(void* d, uint32_t category, const wchar_t* name) {
  char b[format::kNvtxMessageBytes];
  name_record(EventType::nvtx_category, handle_value(d), category, b, to_utf8(name, b, sizeof b));
}
void* domain_register_string_a(void* d, const char* s) {
  void* h = new_handle();
  name_record(EventType::nvtx_string, handle_value(d), handle_value(h), s, bounded_length(s));
  return h;
}
void* domain_register_string_w(void* d, const wchar_t* s) {
  char b[format::kNvtxMessageBytes];
  void* h = new_handle();
  name_record(EventType::nvtx_string, handle_value(d), handle_value(h), b, to_utf8(s, b, sizeof b));
  return h;
}
void* domain_create_a(const char* name) {
  void* h = new_handle();
  name_record(EventType::nvtx_domain, handle_value(h), 0, name, bounded_length(name));
  return h;
}
void* domain_create_w(const wchar_t* name) {
  char b[format::kNvtxMessageBytes];
  void* h = new_handle();
  name_record(EventType::nvtx_domain, handle_value(h), 0, b, to_utf8(name, b, sizeof b));
  return h;
}
void domain_destroy(void*) {}

template <typename Fn>
void put(FunctionPointer** table, unsigned size, unsigned id, Fn fn) {
  if (id < size && table[id]) *table[id] = reinterpret_cast<FunctionPointer>(fn);
}

}  // namespace
}  // namespace nvtx

namespace {
bool init_nvtx(const Config& config, std::string* why) {
  std::string other;
  if (env_names_another_library("NVTX_INJECTION64_PATH", &other)) {
    *why = "NVTX_INJECTION64_PATH names another tool's injection library (" + other + "): NVTX is left to it, no ranges recorded";
    return false;
  }
  nvtx::g_aggregate = config.mode == TraceMode::aggregate;
  return true;
}

const char* const kNvtxExports[] = {"InitializeInjectionNvtx2", "InitializeInjectionNvtxExtension"};
}  // namespace

extern const Provider kNvtxProvider = {"nvtx", "NVTX ranges, marks and payloads, as NVTX's injection library (NVTX_INJECTION64_PATH)",
                                       &init_nvtx, &g_nvtx_active, nullptr, {}, kNvtxExports};

}  // namespace sigmatrace::profiler

using namespace sigmatrace::profiler::nvtx;

SIGMATRACE_EXPORT int InitializeInjectionNvtx2(GetExportTable get_export_table) {
  if (!get_export_table) return 0;
  auto* callbacks = static_cast<const ExportTableCallbacks*>(get_export_table(kEtidCallbacks));
  if (!callbacks || !callbacks->get_module_function_table) return 0;
  FunctionTable t = nullptr;
  unsigned n = 0;
  if (callbacks->get_module_function_table(kModuleCore, &t, &n) && t) {
    put(t, n, kMarkEx, &mark_ex), put(t, n, kMarkA, &mark_a), put(t, n, kMarkW, &mark_w);
    put(t, n, kRangeStartEx, &range_start_ex), put(t, n, kRangeStartA, &range_start_a), put(t, n, kRangeStartW, &range_start_w);
    put(t, n, kRangeEnd, &range_end);
    put(t, n, kRangePushEx, &range_push_ex), put(t, n, kRangePushA, &range_push_a), put(t, n, kRangePushW, &range_push_w);
    put(t, n, kRangePop, &range_pop);
    put(t, n, kNameCategoryA, &name_category_a), put(t, n, kNameCategoryW, &name_category_w);
    put(t, n, kNameOsThreadA, &name_os_thread_a), put(t, n, kNameOsThreadW, &name_os_thread_w);
  }
  t = nullptr, n = 0;
  if (callbacks->get_module_function_table(kModuleCore2, &t, &n) && t) {
    put(t, n, kDomainMarkEx, &domain_mark_ex), put(t, n, kDomainRangeStartEx, &domain_range_start_ex);
    put(t, n, kDomainRangeEnd, &domain_range_end), put(t, n, kDomainRangePushEx, &domain_range_push_ex);
    put(t, n, kDomainRangePop, &domain_range_pop);
    put(t, n, kDomainNameCategoryA, &domain_name_category_a), put(t, n, kDomainNameCategoryW, &domain_name_category_w);
    put(t, n, kDomainRegisterStringA, &domain_register_string_a), put(t, n, kDomainRegisterStringW, &domain_register_string_w);
    put(t, n, kDomainCreateA, &domain_create_a), put(t, n, kDomainCreateW, &domain_create_w);
    put(t, n, kDomainDestroy, &domain_destroy);
  }
  if (auto* v = static_cast<const ExportTableVersionInfo*>(get_export_table(kEtidVersionInfo));
      v && v->struct_size >= sizeof(ExportTableVersionInfo) && v->set_injection_nvtx_version)
    v->set_injection_nvtx_version(3);
  return 1;
}

// NVTX's payload extension: schemas that describe the bytes attached to a range or mark (NCCL
// registers one per collective: communicator, count, data type, reduction), enums that name their
// values, and the push/start/mark variants that take payloads. A schema is recorded once, with
// every entry's offset resolved here (NVTX lets an entry leave it to the C packing rules), so
// that the analysis decodes each payload's bytes by offset and type alone.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>

#include "format/event_types.h"
#include "profiler/providers/nvtx/nvtx_abi.h"
#include "profiler/providers/nvtx/nvtx_ranges.h"
#include "profiler/providers/provider_kit.h"
#include "profiler/runtime/recorder.h"

namespace sigmatrace::profiler::nvtx {
namespace {

using format::EventType;

// Registered enums' sizes, for schema entries typed by them (control path: one mutex).
constexpr size_t kMaxEnums = 256;
std::mutex g_mutex;
struct EnumSize {
  uint64_t id, size;
};
EnumSize g_enums[kMaxEnums];
size_t g_nenums = 0;
std::atomic<uint64_t> g_next_schema{kSchemaIdDynamicStart};

// The size (and natural alignment) of a predefined entry type; 0: unknown.
uint64_t type_size(uint64_t type) {
  switch (type) {
    case 1: case 2: case 11: case 12: case 25: case 32: return 1;                 // char, uchar, int8, uint8, char8, byte
    case 3: case 4: case 13: case 14: case 26: case 42: case 50: return 2;        // short .. char16, float16, bf16
    case 5: case 6: case 15: case 16: case 19: case 24: case 27: case 43: case 52:  // int .. float, wchar, char32, float32, tf32
    case 68: case 69: case 71: case 73: return 4;                                 // category, color, pid32, tid32
    case 7: case 8: case 9: case 10: case 17: case 18: case 20: case 22: case 23:   // long .. double, size, address
    case 44: case 70: case 72: case 74: case 75: case 76: case 77: case 78: case 80: return 8;
    case 21: case 33: case 34: case 45: return 16;  // long double, int128, uint128, float128
    default: break;
  }
  std::lock_guard<std::mutex> lock(g_mutex);
  for (size_t i = 0; i < g_nenums; ++i)
    if (g_enums[i].id == type) return g_enums[i].size;
  return 0;
}

constexpr uint64_t kArrayFixedSize = 1 << 4, kArrayMask = 7 << 4;

uint64_t new_schema_id(uint64_t mask, uint64_t given, uint64_t field) {
  return (mask & field) && given ? given : g_next_schema.fetch_add(1, std::memory_order_relaxed);
}

uint64_t schema_register(void* domain, const PayloadSchemaAttr* attr) {
  if (!attr) return 0;
  const uint64_t id = new_schema_id(attr->field_mask, attr->schema_id, kSchemaFieldSchemaId);
  if (!recording_ranges()) return id;
  kit::ErrnoKeeper keep;
  char layout[8192];
  size_t n = 0;
  const size_t count = (attr->field_mask & kSchemaFieldNumEntries) ? attr->num_entries : 0;
  uint64_t next = 0, largest = 0;
  for (size_t i = 0; (attr->field_mask & kSchemaFieldEntries) && attr->entries && i < count; ++i) {
    const PayloadSchemaEntry& e = attr->entries[i];
    const uint64_t one = type_size(e.type);
    const uint64_t elements = (e.flags & kArrayMask) == kArrayFixedSize ? e.array_or_union_detail : 1;
    const uint64_t align = one ? std::min<uint64_t>(one, 8) : 1;
    // An explicit offset wins; otherwise the next one C would give (the first entry's 0 is both).
    const uint64_t offset = e.offset || i == 0 ? e.offset : (next + align - 1) / align * align;
    next = offset + one * elements;
    largest = std::max(largest, next);
    const int w = snprintf(layout + n, sizeof layout - n, "%s\t%llu\t%llu\t%llu\t%llu\n", e.name ? e.name : "",
                           static_cast<unsigned long long>(e.type), static_cast<unsigned long long>(e.flags),
                           static_cast<unsigned long long>(offset), static_cast<unsigned long long>(elements));
    if (w < 0 || size_t(w) >= sizeof layout - n) break;  // a longer layout is cut at its last whole entry
    n += size_t(w);
  }
  const uint64_t size = (attr->field_mask & kSchemaFieldStaticSize) ? attr->payload_static_size : largest;
  const uint64_t words[] = {reinterpret_cast<uintptr_t>(domain), id, 1, size};
  record_with_bytes<EventType::nvtx_schema>(words, layout, n);
  return id;
}

uint64_t enum_register(void* domain, const PayloadEnumAttr* attr) {
  if (!attr) return 0;
  const uint64_t id = new_schema_id(attr->field_mask, attr->schema_id, kEnumFieldSchemaId);
  const uint64_t size = (attr->field_mask & kEnumFieldSize) ? attr->size_of_enum : 4;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_nenums < kMaxEnums) g_enums[g_nenums++] = {id, size};
  }
  if (!recording_ranges()) return id;
  kit::ErrnoKeeper keep;
  char layout[8192];
  size_t n = 0;
  const size_t count = (attr->field_mask & kEnumFieldNumEntries) ? attr->num_entries : 0;
  for (size_t i = 0; (attr->field_mask & kEnumFieldEntries) && attr->entries && i < count; ++i) {
    const int w = snprintf(layout + n, sizeof layout - n, "%s\t%llu\n", attr->entries[i].name ? attr->entries[i].name : "",
                           static_cast<unsigned long long>(attr->entries[i].value));
    if (w < 0 || size_t(w) >= sizeof layout - n) break;
    n += size_t(w);
  }
  const uint64_t words[] = {reinterpret_cast<uintptr_t>(domain), id, 2, size};
  record_with_bytes<EventType::nvtx_schema>(words, layout, n);
  return id;
}

void mark_payload(void* d, const PayloadData* p, size_t n) { mark(d, nullptr, nullptr, 0, p, n); }
int range_push_payload(void* d, const PayloadData* p, size_t n) { return push(d, nullptr, nullptr, 0, p, n); }
int range_pop_payload(void* d, const PayloadData*, size_t) { return pop(d); }
uint64_t range_start_payload(void* d, const PayloadData* p, size_t n) { return start(d, nullptr, nullptr, 0, p, n); }
void range_end_payload(void* d, uint64_t id, const PayloadData*, size_t) { end_range(d, id); }
uint8_t domain_is_enabled(void*) { return 1; }

}  // namespace
}  // namespace sigmatrace::profiler::nvtx

using namespace sigmatrace::profiler::nvtx;

// Once per extension module of each NVTX copy; only the payload module is taken (the others,
// counters and memory, stay NVTX's no-ops).
SIGMATRACE_EXPORT int InitializeInjectionNvtxExtension(ExtModuleInfo* info) {
  if (!info || info->module_id != kExtModulePayload || info->segments_count < 1 || !info->segments) return 0;
  ExtModuleSegment& s = info->segments[0];
  auto put = [&s](unsigned id, auto fn) {
    if (id < s.slot_count && s.function_slots) s.function_slots[id] = reinterpret_cast<intptr_t>(fn);
  };
  put(kPayloadSchemaRegister, &schema_register);
  put(kPayloadEnumRegister, &enum_register);
  put(kMarkPayload, &mark_payload);
  put(kRangePushPayload, &range_push_payload);
  put(kRangePopPayload, &range_pop_payload);
  put(kRangeStartPayload, &range_start_payload);
  put(kRangeEndPayload, &range_end_payload);
  put(kDomainIsEnabled, &domain_is_enabled);
  return 1;
}

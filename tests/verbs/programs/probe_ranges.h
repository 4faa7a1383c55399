// verbs_probe's NVTX ranges (built as verbs_probe_nvtx, with the CUDA toolkit's NVTX headers):
// every phase of its traffic inside known ranges, so that the analysis can be checked to put each
// operation in exactly its range. The plan, printed by the program:
//   start/end range "probe" (default domain) around all traffic;
//   push "classic writes" > push "batch K" (domain "verbs_probe", a registered string) per 10 writes;
//   push "wr api" with an NCCL-like payload {comm, bytes, op (an enum)}, in domain "verbs_probe";
//   push "sends" (a wide string), a mark "bad rkey", then push "bad rkey write".
// Without VERBS_PROBE_NVTX every call is a no-op.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <ctime>

#ifdef VERBS_PROBE_NVTX
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>

namespace probe_ranges {

struct CollectivePayload {  // what NCCL attaches to a collective's range, in miniature
  uint64_t comm;
  size_t bytes;
  int32_t op;
};

inline nvtxDomainHandle_t domain() {
  static nvtxDomainHandle_t d = nvtxDomainCreateA("verbs_probe");
  return d;
}
inline uint64_t payload_schema() {
  static uint64_t id = [] {
    static const nvtxPayloadEnum_t ops[] = {{"ncclSum", 0, 0}, {"ncclProd", 1, 0}, {"ncclMax", 2, 0}};
    nvtxPayloadEnumAttr_t e{};
    e.fieldMask = NVTX_PAYLOAD_ENUM_ATTR_FIELD_NAME | NVTX_PAYLOAD_ENUM_ATTR_FIELD_ENTRIES | NVTX_PAYLOAD_ENUM_ATTR_FIELD_NUM_ENTRIES |
                  NVTX_PAYLOAD_ENUM_ATTR_FIELD_SIZE;
    e.name = "ncclRedOp_t";
    e.entries = ops;
    e.numEntries = 3;
    e.sizeOfEnum = sizeof(int32_t);
    const uint64_t op_type = nvtxPayloadEnumRegister(domain(), &e);
    static nvtxPayloadSchemaEntry_t entries[] = {
        {0, NVTX_PAYLOAD_ENTRY_TYPE_UINT64, "Communicator", nullptr, 0, offsetof(CollectivePayload, comm), nullptr, nullptr},
        {0, NVTX_PAYLOAD_ENTRY_TYPE_SIZE, "Message size [bytes]", nullptr, 0, offsetof(CollectivePayload, bytes), nullptr, nullptr},
        {0, 0, "Reduction operation", nullptr, 0, offsetof(CollectivePayload, op), nullptr, nullptr}};
    entries[2].type = op_type;
    nvtxPayloadSchemaAttr_t a{};
    a.fieldMask = NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NAME | NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_TYPE | NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_ENTRIES |
                  NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NUM_ENTRIES | NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_STATIC_SIZE;
    a.name = "CollectivePayload";
    a.type = NVTX_PAYLOAD_SCHEMA_TYPE_STATIC;
    a.entries = entries;
    a.numEntries = 3;
    a.payloadStaticSize = sizeof(CollectivePayload);
    return nvtxPayloadSchemaRegister(domain(), &a);
  }();
  return id;
}

inline uint64_t begin_probe() { return nvtxRangeStartA("probe"); }
inline void end_probe(uint64_t id) { nvtxRangeEnd(id); }
inline void push(const char* name) { nvtxRangePushA(name); }
inline void pop() { nvtxRangePop(); }
inline void push_batch(int k) {
  static nvtxStringHandle_t names[64] = {};
  char text[32];
  std::snprintf(text, sizeof text, "batch %d", k);
  nvtxStringHandle_t& h = names[k % 64];
  if (!h) h = nvtxDomainRegisterStringA(domain(), text);
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = h;
  nvtxDomainRangePushEx(domain(), &a);
}
inline void pop_batch() { nvtxDomainRangePop(domain()); }
inline void push_collective(uint64_t comm, size_t bytes, int32_t op) {
  CollectivePayload p{comm, bytes, op};
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = "wr api";
  NVTX_PAYLOAD_EVTATTR_SET(&a, payload_schema(), &p, sizeof p);
  nvtxDomainRangePushEx(domain(), &a);
}
inline void pop_collective() { nvtxDomainRangePop(domain()); }
inline void push_wide() { nvtxRangePushW(L"sends"); }
inline void mark(const char* text) { nvtxMarkA(text); }
// n ranges, two levels deep, a pair every gap_ns at most (the range-heavy run: a program's ranges
// enclose work; 0: as fast as NVTX takes them).
inline void many(long n, long gap_ns) {
  auto now = [] {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000L + ts.tv_nsec;
  };
  long next = now();
  for (long i = 0; i < n; i += 2) {
    nvtxRangePushA("outer");
    nvtxRangePushA("inner");
    nvtxRangePop();
    nvtxRangePop();
    next += gap_ns;
    while (gap_ns && now() < next) {
    }
  }
}

}  // namespace probe_ranges
#else
namespace probe_ranges {
inline uint64_t begin_probe() { return 0; }
inline void end_probe(uint64_t) {}
inline void push(const char*) {}
inline void pop() {}
inline void push_batch(int) {}
inline void pop_batch() {}
inline void push_collective(uint64_t, size_t, int32_t) {}
inline void pop_collective() {}
inline void push_wide() {}
inline void mark(const char*) {}
inline void many(long, long) {}
}  // namespace probe_ranges
#endif

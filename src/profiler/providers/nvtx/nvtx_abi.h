// The NVTX v3 tool interface as the profiler meets it, declared from the documented layout (the
// CUDA toolkit's nvtx3 headers) so that the profiler builds without them. NVTX is header-only:
// every library that uses it carries its own copy, and each copy, at its first NVTX call, loads
// the library named by NVTX_INJECTION64_PATH and calls its InitializeInjectionNvtx2 with a
// function that hands out export tables. The callbacks table gives, per module, an array of
// pointers to that copy's function slots, indexed by callback id; a tool writes its own functions
// into the slots it handles. Extensions (payload schemas) are initialised the same way, through
// InitializeInjectionNvtxExtension and one segment of slots per module.
#pragma once
#include <cstddef>
#include <cstdint>

namespace sigmatrace::profiler::nvtx {

using FunctionPointer = void (*)();
using FunctionTable = FunctionPointer**;

enum ExportTableId : uint32_t { kEtidCallbacks = 1, kEtidVersionInfo = 3 };
enum CallbackModule : uint32_t { kModuleCore = 1, kModuleCore2 = 5 };

struct ExportTableCallbacks {
  size_t struct_size;
  int (*get_module_function_table)(CallbackModule module, FunctionTable* out_table, unsigned* out_size);
};
struct ExportTableVersionInfo {
  size_t struct_size;
  uint32_t version;
  uint32_t reserved0;
  void (*set_injection_nvtx_version)(uint32_t version);
};
using GetExportTable = const void* (*)(uint32_t export_table_id);

// Callback ids of the core module (nvtxMarkA, nvtxRangePushA, ...) and of the domain module.
enum CoreCallback : unsigned {
  kMarkEx = 1, kMarkA = 2, kMarkW = 3, kRangeStartEx = 4, kRangeStartA = 5, kRangeStartW = 6, kRangeEnd = 7,
  kRangePushEx = 8, kRangePushA = 9, kRangePushW = 10, kRangePop = 11, kNameCategoryA = 12, kNameCategoryW = 13,
  kNameOsThreadA = 14, kNameOsThreadW = 15,
};
enum Core2Callback : unsigned {
  kDomainMarkEx = 1, kDomainRangeStartEx = 2, kDomainRangeEnd = 3, kDomainRangePushEx = 4, kDomainRangePop = 5,
  kDomainNameCategoryA = 8, kDomainNameCategoryW = 9, kDomainRegisterStringA = 10, kDomainRegisterStringW = 11,
  kDomainCreateA = 12, kDomainCreateW = 13, kDomainDestroy = 14,
};

// nvtxEventAttributes_t, version 2 (48 bytes); `size` says how much of it the caller filled.
struct EventAttributes {
  uint16_t version;
  uint16_t size;
  uint32_t category;
  int32_t color_type;    // 1: ARGB
  uint32_t color;
  int32_t payload_type;  // 1 u64, 2 i64, 3 double, 4 u32, 5 i32, 6 float, kPayloadTypeExt
  int32_t reserved0;     // with kPayloadTypeExt: how many PayloadData the payload points at
  uint64_t payload;      // the union, as its 8 bytes
  int32_t message_type;  // 1 ASCII, 2 wide, 3 registered string handle
  int32_t pad;
  const void* message;
};
static_assert(sizeof(EventAttributes) == 48);
inline constexpr int32_t kMessageAscii = 1, kMessageUnicode = 2, kMessageRegistered = 3;
inline constexpr int32_t kPayloadTypeExt = static_cast<int32_t>(0xDFBD0009u);

// The payload extension (module id 2): one segment whose slots are indexed by these ids.
struct ExtModuleSegment {
  size_t segment_id;
  size_t slot_count;
  intptr_t* function_slots;
};
struct ExtModuleInfo {
  uint16_t nvtx_version;
  uint16_t struct_size;
  uint16_t module_id;
  uint16_t compat_id;
  size_t segments_count;
  ExtModuleSegment* segments;
  void* get_export_function;
  const void* ext_info;
};
inline constexpr uint16_t kExtModulePayload = 2;
enum PayloadCallback : unsigned {
  kPayloadSchemaRegister = 0, kPayloadEnumRegister = 1, kMarkPayload = 2, kRangePushPayload = 3, kRangePopPayload = 4,
  kRangeStartPayload = 5, kRangeEndPayload = 6, kDomainIsEnabled = 7,
};

struct PayloadData {
  uint64_t schema_id;
  size_t size;
  const void* payload;
};
struct PayloadSchemaEntry {
  uint64_t flags;
  uint64_t type;  // a predefined type (below 1 << 24) or a registered schema or enum id
  const char* name;
  const char* description;
  uint64_t array_or_union_detail;
  uint64_t offset;
  const void* semantics;
  const void* reserved;
};
struct PayloadSchemaAttr {
  uint64_t field_mask;
  const char* name;
  uint64_t type;
  uint64_t flags;
  const PayloadSchemaEntry* entries;
  size_t num_entries;
  size_t payload_static_size;
  size_t pack_align;
  uint64_t schema_id;
  void* extension;
};
struct PayloadEnum {
  const char* name;
  uint64_t value;
  int8_t is_flag;
};
struct PayloadEnumAttr {
  uint64_t field_mask;
  const char* name;
  const PayloadEnum* entries;
  size_t num_entries;
  size_t size_of_enum;
  uint64_t schema_id;
  void* extension;
};
// fieldMask bits of both attribute structs.
inline constexpr uint64_t kSchemaFieldName = 1 << 1, kSchemaFieldType = 1 << 2, kSchemaFieldEntries = 1 << 4,
                          kSchemaFieldNumEntries = 1 << 5, kSchemaFieldStaticSize = 1 << 6, kSchemaFieldSchemaId = 1 << 8;
inline constexpr uint64_t kEnumFieldName = 1 << 1, kEnumFieldEntries = 1 << 2, kEnumFieldNumEntries = 1 << 3,
                          kEnumFieldSize = 1 << 4, kEnumFieldSchemaId = 1 << 5;
inline constexpr uint64_t kSchemaIdDynamicStart = uint64_t{1} << 32;

}  // namespace sigmatrace::profiler::nvtx

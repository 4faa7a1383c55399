// Materialises the X-macro schema of event_types.h as tables the encoder and reader iterate.
#include "format/event_types.h"

#include <cstddef>

namespace sigmatrace::format {
namespace {

#define SIGMATRACE_FIELD_SPEC(kind, name) FieldSpec{FieldKind::kind, name},
#define SIGMATRACE_FIELDS_ARRAY(id, ident, name, fields) \
  constexpr FieldSpec ident##_fields[] = {fields};
SIGMATRACE_EVENT_TYPES(SIGMATRACE_FIELDS_ARRAY, SIGMATRACE_FIELD_SPEC)
#undef SIGMATRACE_FIELDS_ARRAY

template <size_t N>
constexpr bool has_bytes_of(const FieldSpec (&fields)[N]) {
  for (size_t f = 0; f < N; ++f)
    if (fields[f].kind == FieldKind::bytes) return true;
  return false;
}

#define SIGMATRACE_SPEC_ENTRY(id, ident, name, fields)                                                                  \
  EventSpec{id, name, static_cast<uint8_t>(sizeof(ident##_fields) / sizeof(FieldSpec)), ident##_fields, \
            has_bytes_of(ident##_fields)},
constexpr EventSpec kSpecs[] = {SIGMATRACE_EVENT_TYPES(SIGMATRACE_SPEC_ENTRY, SIGMATRACE_FIELD_SPEC)};
#undef SIGMATRACE_SPEC_ENTRY
#undef SIGMATRACE_FIELD_SPEC

}  // namespace

const EventSpec* builtin_event_specs(int* count) {
  *count = static_cast<int>(sizeof(kSpecs) / sizeof(kSpecs[0]));
  return kSpecs;
}

// The writer looks up every event's spec: a table indexed by id, built at compile time, instead of
// a search (it was a tenth of the writer thread's time in Full mode).
constexpr uint16_t kMaxBuiltinId = [] {
  uint16_t m = 0;
  for (const EventSpec& s : kSpecs) m = s.id > m ? s.id : m;
  return m;
}();
struct SpecIndex {
  const EventSpec* by_id[kMaxBuiltinId + 1] = {};
  constexpr SpecIndex() {
    for (const EventSpec& s : kSpecs) by_id[s.id] = &s;
  }
};
constexpr SpecIndex kSpecIndex{};

const EventSpec* find_builtin_spec(uint16_t id) { return id <= kMaxBuiltinId ? kSpecIndex.by_id[id] : nullptr; }

}  // namespace sigmatrace::format

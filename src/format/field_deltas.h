// The reference values of the field-delta chunk encoding (ChunkEncoding::field_deltas): each
// integer field of an event is stored as its change since the same field of the previous event of
// the same type in the chunk. Encoder and decoder keep this table identically, so the rule of
// which event is "previous" lives here once: 256 slots picked by type id; a slot belongs to the
// last type that used it, and a type that takes a slot over starts again from zero (no two
// built-in types share a slot, so that only costs compression for types added later). Types with
// a bytes field never use it. Lives on the stack of one chunk's encoding or decoding.
#pragma once
#include <cstdint>
#include <cstring>

#include "format/event_types.h"

namespace sigmatrace::format {

class FieldDeltaTable {
 public:
  FieldDeltaTable() {
    for (Slot& s : slots_) s.type = kFree;
  }
  // The previous values of `type`'s first `fields` fields (zero after a take-over); the caller
  // replaces them with the event's values as it goes.
  uint64_t* previous(uint64_t type, uint32_t fields) {
    Slot& s = slots_[type % kSlots];
    if (s.type != type) {
      s.type = type;
      std::memset(s.values, 0, sizeof(uint64_t) * fields);
    }
    return s.values;
  }
  // An event of `type` whose values were skipped: the slot changes hands as it did when encoding;
  // its values are not needed (every event of a skipped type is skipped).
  void skipped(uint64_t type) {
    Slot& s = slots_[type % kSlots];
    if (s.type != type) s.type = kFree;
  }

  static constexpr uint32_t kSlots = 256;

 private:
  static constexpr uint64_t kFree = ~uint64_t{0};
  struct Slot {
    uint64_t type;
    uint64_t values[kMaxEventFields];
  };
  Slot slots_[kSlots];
};

}  // namespace sigmatrace::format

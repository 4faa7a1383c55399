// The pieces of Perfetto's wire format that trace.pftrace uses (field numbers from Perfetto's
// documented trace_packet.proto, clock_snapshot.proto, track_descriptor.proto,
// process_descriptor.proto, thread_descriptor.proto, counter_descriptor.proto, track_event.proto,
// debug_annotation.proto; tests/analysis/perfetto_subset.proto lists the same subset for decoding),
// shared by the track descriptors (perfetto_tracks.cpp) and the events (perfetto_writer.cpp).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "export/protobuf_writer.h"

namespace sigmatrace::exporter::pftrace {

// TracePacket
constexpr uint32_t kPacket = 1, kTimestamp = 8, kSequenceId = 10, kTrackEvent = 11, kClockSnapshot = 6, kTrackDescriptor = 60,
                   kSequenceFlags = 13, kInternedData = 12, kPacketDefaults = 59, kTimestampClockId = 58, kCompressedPackets = 50;
constexpr uint64_t kSeqIncrementalStateCleared = 1, kSeqNeedsIncrementalState = 2;
// TracePacketDefaults
constexpr uint32_t kDefaultsClockId = 58;
// InternedData: tables, and the fields of each entry (EventName, EventCategory, DebugAnnotationName,
// InternedString all have iid = 1 and their text = 2)
constexpr uint32_t kIdCategories = 1, kIdNames = 2, kIdAnnotationNames = 3, kIdAnnotationStrings = 29, kIdEntryIid = 1, kIdEntryText = 2;
// ClockSnapshot / ClockSnapshot.Clock
constexpr uint32_t kCsClocks = 1, kCsPrimary = 2, kClockId = 1, kClockTimestamp = 2;
constexpr uint64_t kClockRealtime = 1, kClockBoottime = 6;
// A clock of one sequence (ids 64..127 are sequence-scoped): ns since the sequence's own origin,
// so an event's timestamp is a 4-5 byte varint instead of 9.
constexpr uint64_t kSequenceClock = 64;
// TrackDescriptor
constexpr uint32_t kTdUuid = 1, kTdName = 2, kTdProcess = 3, kTdThread = 4, kTdParent = 5, kTdCounter = 8, kTdChildOrdering = 11,
                   kTdSiblingRank = 12, kTdDescription = 14, kTdMergeBehavior = 15, kTdProcessOrdering = 19;
// ProcessDescriptor / ThreadDescriptor
constexpr uint32_t kPdPid = 1, kPdName = 6, kPdLabels = 8, kThPid = 1, kThTid = 2, kThName = 5;
// CounterDescriptor
constexpr uint32_t kCdUnitName = 6;
// TrackEvent
constexpr uint32_t kTeDebug = 4, kTeType = 9, kTeTrack = 11, kTeDoubleValue = 44,
                   kTeFlowIds = 47, kTeTerminatingFlowIds = 48, kTeNameIid = 10, kTeCategoryIids = 3;
constexpr uint64_t kSliceBegin = 1, kSliceEnd = 2, kInstant = 3, kCounter = 4;
// DebugAnnotation
constexpr uint32_t kDaUint = 3, kDaInt = 4, kDaNameIid = 1, kDaStringIid = 17, kDaPointer = 7;
constexpr uint64_t kExplicitOrdering = 3, kMergeByName = 1, kMergeNone = 2;

struct Track {
  uint64_t uuid = 0, parent = 0;
  std::string name, description;
  int64_t rank = 0;
  const char* counter_unit = nullptr;  // a counter track
  bool merge_by_name = false;          // lanes: same-named siblings form one track in the UI
};

inline void descriptor(ProtoWriter* w, const Track& t) {
  size_t p = w->begin(kPacket);
  size_t td = w->begin(kTrackDescriptor);
  w->u64(kTdUuid, t.uuid);
  if (t.parent) w->u64(kTdParent, t.parent);
  w->str(kTdName, t.name);
  if (!t.description.empty()) w->str(kTdDescription, t.description);
  w->u64(kTdChildOrdering, kExplicitOrdering);
  w->i64(kTdSiblingRank, t.rank);
  // Same-named siblings (two "main" threads, two QPs with one number) stay apart unless lanes.
  w->u64(kTdMergeBehavior, t.merge_by_name ? kMergeByName : kMergeNone);
  if (t.counter_unit) {
    size_t c = w->begin(kTdCounter);
    w->str(kCdUnitName, t.counter_unit);
    w->end(c);
  }
  w->end(td);
  w->end(p);
}

// A counter's bins as values where they change (the counter holds until the next one), and 0
// after the last bin: emit(ts, value per second).
template <typename Emit>
void write_counter(const std::vector<uint64_t>& bins, int64_t start_ns, int64_t bin_ns, Emit&& emit) {
  const double scale = 1e9 / static_cast<double>(bin_ns);
  bool have = false;
  uint64_t last = 0;
  for (size_t b = 0; b <= bins.size(); ++b) {
    uint64_t v = b < bins.size() ? bins[b] : 0;
    if (have && v == last) continue;
    emit(start_ns + static_cast<int64_t>(b) * bin_ns, static_cast<double>(v) * scale);
    have = true, last = v;
  }
}

// A counter value in a packet of its own, on a sequence that uses no incremental state.
inline void counter_packet(ProtoWriter* w, uint64_t seq, int64_t ts_ns, uint64_t track, double value) {
  size_t p = w->begin(kPacket);
  w->u64(kTimestamp, static_cast<uint64_t>(ts_ns));
  w->u64(kSequenceId, seq);
  size_t te = w->begin(kTrackEvent);
  w->u64(kTeType, kCounter);
  w->u64(kTeTrack, track);
  w->dbl(kTeDoubleValue, value);
  w->end(te);
  w->end(p);
}

}  // namespace sigmatrace::exporter::pftrace

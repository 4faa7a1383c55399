// One packet sequence of trace.pftrace (one per trace file): what makes the timeline a few bytes
// per event, using only what Perfetto's format offers:
// - names, categories, annotation names and annotation text values are interned: each text is
//   written once per sequence (in the packet that first uses it) and then referred to by number;
// - timestamps are on the sequence's own clock (ns since its origin, declared against REALTIME in
//   the sequence's first packet), a 4-5 byte varint instead of 9 for ns since the epoch;
// - packets are gathered in blocks and each block is written as one deflate-compressed packet
//   (`compressed_packets`), which Perfetto's trace processor and UI unpack on load.
// Order matters only within a sequence (interned data before its first use): the blocks of one
// sequence are appended in order; sequences may interleave freely.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "export/perfetto_wire.h"
#include "export/protobuf_writer.h"


namespace sigmatrace::exporter::pftrace {

class PacketSequence {
 public:
  using Output = std::function<void(std::string_view)>;
  // `origin_ns`: the sequence clock's zero on the REALTIME timeline; events before it are written
  // with an absolute REALTIME timestamp instead.
  PacketSequence(uint32_t sequence_id, int64_t origin_ns, bool compress, Output out);
  ~PacketSequence();
  PacketSequence(const PacketSequence&) = delete;
  PacketSequence& operator=(const PacketSequence&) = delete;

  // begin_event ... (name, category, annotations, flows) ... end_event: one TrackEvent packet.
  void begin_event(int64_t ts_ns, uint64_t type, uint64_t track);
  void name(std::string_view s) { w_.u64(kTeNameIid, intern(kNames, s)); }
  void category(std::string_view s) { w_.u64(kTeCategoryIids, intern(kCategories, s)); }
  void annotation(std::string_view key, uint64_t v);
  void annotation_int(std::string_view key, int64_t v);
  void annotation_text(std::string_view key, std::string_view v);  // the value interned too
  void annotation_hex(std::string_view key, uint64_t v);           // an address: shown in hex
  void flow(uint64_t id) { w_.fixed64(kTeFlowIds, id); }
  void terminating_flow(uint64_t id) { w_.fixed64(kTeTerminatingFlowIds, id); }
  void end_event();
  // A counter value at ts_ns (a packet of its own).
  void counter(int64_t ts_ns, uint64_t track, double value);
  // A track descriptor: sequence-independent, written in the same stream.
  void describe(const Track& t) { descriptor(&w_, t); maybe_flush(); }

  void flush();  // writes what is buffered (compressed when asked)

 private:
  enum Table : uint8_t { kCategories, kNames, kAnnotationNames, kAnnotationStrings, kTables };
  struct Pending {
    Table table;
    uint64_t iid;
    std::string_view text;  // points into the table's key (stable in an unordered_map)
  };
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  uint64_t intern(Table t, std::string_view s);
  size_t begin_annotation(std::string_view key);
  void timestamp(int64_t ts_ns);
  bool compress_block(std::string_view raw, std::string* out);
  void maybe_flush() {
    if (w_.size() >= kBlockBytes) flush();
  }

  static constexpr size_t kBlockBytes = 256 * 1024;  // Perfetto's own service compresses in blocks of this order
  uint32_t seq_;
  int64_t origin_;
  bool compress_;
  Output out_;
  ProtoWriter w_;
  std::string packed_;  // the last compressed block (its buffer reused)
  size_t packet_ = 0, event_ = 0;
  std::unordered_map<std::string, uint64_t, Hash, std::equal_to<>> tables_[kTables];
  struct RecentText {
    const char* data = nullptr;  // where the text was last passed from
    std::string_view interned;   // its copy in the table
    uint64_t iid = 0;
  };
  static constexpr size_t kRecentTexts = 64;
  RecentText recent_[kTables][kRecentTexts];
  std::vector<Pending> pending_;
  void* compressor_ = nullptr;  // libdeflate's, or a zlib stream
};

}  // namespace sigmatrace::exporter::pftrace

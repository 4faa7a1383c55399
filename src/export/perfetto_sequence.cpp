// See perfetto_sequence.h.
#include "export/perfetto_sequence.h"

#include <cstring>

#ifdef SIGMATRACE_LIBDEFLATE
#include <libdeflate.h>
#else
#include <zlib.h>
#endif

namespace sigmatrace::exporter::pftrace {

PacketSequence::PacketSequence(uint32_t sequence_id, int64_t origin_ns, bool compress, Output out)
    : seq_(sequence_id), origin_(origin_ns), compress_(compress), out_(std::move(out)) {
  // Level 1: higher levels cost several times the time for a few percent of size on this
  // repetitive data.
  if (compress_) {
#ifdef SIGMATRACE_LIBDEFLATE
    compressor_ = libdeflate_alloc_compressor(1);
#else
    auto* z = new z_stream{};
    if (deflateInit(z, 1) == Z_OK) compressor_ = z;
    else delete z;
#endif
    compress_ = compressor_ != nullptr;  // else written plain
  }
  // The sequence's first packet: its state starts here, its clock is declared (0 on it is
  // origin_ns on REALTIME) and made the default of its later packets.
  size_t p = w_.begin(kPacket);
  w_.u64(kSequenceId, seq_);
  w_.u64(kSequenceFlags, kSeqIncrementalStateCleared);
  size_t d = w_.begin(kPacketDefaults);
  w_.u64(kDefaultsClockId, kSequenceClock);
  w_.end(d);
  size_t cs = w_.begin(kClockSnapshot);
  size_t c = w_.begin(kCsClocks);
  w_.u64(kClockId, kSequenceClock);
  w_.u64(kClockTimestamp, 0);
  w_.end(c);
  c = w_.begin(kCsClocks);
  w_.u64(kClockId, kClockRealtime);
  w_.u64(kClockTimestamp, static_cast<uint64_t>(origin_));
  w_.end(c);
  w_.end(cs);
  w_.end(p);
}

PacketSequence::~PacketSequence() {
  if (!compressor_) return;
#ifdef SIGMATRACE_LIBDEFLATE
  libdeflate_free_compressor(static_cast<libdeflate_compressor*>(compressor_));
#else
  deflateEnd(static_cast<z_stream*>(compressor_));
  delete static_cast<z_stream*>(compressor_);
#endif
}

// The block as one zlib stream into *out; false if it did not fit (cannot happen: *out is sized
// by the library's own bound).
bool PacketSequence::compress_block(std::string_view raw, std::string* out) {
#ifdef SIGMATRACE_LIBDEFLATE
  auto* c = static_cast<libdeflate_compressor*>(compressor_);
  out->resize(libdeflate_zlib_compress_bound(c, raw.size()));
  const size_t n = libdeflate_zlib_compress(c, raw.data(), raw.size(), out->data(), out->size());
  out->resize(n);
  return n != 0;
#else
  auto* z = static_cast<z_stream*>(compressor_);
  out->resize(deflateBound(z, raw.size()));
  deflateReset(z);
  z->next_in = reinterpret_cast<Bytef*>(const_cast<char*>(raw.data()));
  z->avail_in = static_cast<uInt>(raw.size());
  z->next_out = reinterpret_cast<Bytef*>(out->data());
  z->avail_out = static_cast<uInt>(out->size());
  const bool ok = deflate(z, Z_FINISH) == Z_STREAM_END;
  out->resize(out->size() - z->avail_out);
  return ok;
#endif
}

uint64_t PacketSequence::intern(Table t, std::string_view s) {
  // Nearly every text comes from the same few places (literals, the model's labels): a text at
  // the pointer seen last time is checked against its interned copy instead of hashed.
  RecentText& recent = recent_[t][((reinterpret_cast<uintptr_t>(s.data()) >> 3) ^ s.size()) % kRecentTexts];
  if (recent.data == s.data() && recent.interned.size() == s.size() &&
      (s.empty() || std::memcmp(recent.interned.data(), s.data(), s.size()) == 0))
    return recent.iid;
  auto& table = tables_[t];
  auto it = table.find(s);
  if (it == table.end()) {
    const uint64_t iid = table.size() + 1;  // iids start at 1
    it = table.emplace(std::string(s), iid).first;
    pending_.push_back({t, iid, it->first});
  }
  recent = {s.data(), it->first, it->second};
  return it->second;
}

void PacketSequence::timestamp(int64_t ts_ns) {
  if (ts_ns >= origin_) {
    w_.u64(kTimestamp, static_cast<uint64_t>(ts_ns - origin_));
  } else {
    w_.u64(kTimestampClockId, kClockRealtime);
    w_.u64(kTimestamp, static_cast<uint64_t>(ts_ns));
  }
}

void PacketSequence::begin_event(int64_t ts_ns, uint64_t type, uint64_t track) {
  packet_ = w_.begin(kPacket);
  timestamp(ts_ns);
  w_.u64(kSequenceId, seq_);
  w_.u64(kSequenceFlags, kSeqNeedsIncrementalState);
  event_ = w_.begin(kTrackEvent);
  w_.u64(kTeType, type);
  w_.u64(kTeTrack, track);
}

// A DebugAnnotation: its interned name, then one value field.
size_t PacketSequence::begin_annotation(std::string_view key) {
  size_t a = w_.begin(kTeDebug);
  w_.u64(kDaNameIid, intern(kAnnotationNames, key));
  return a;
}

void PacketSequence::annotation(std::string_view key, uint64_t v) {
  size_t a = begin_annotation(key);
  w_.u64(kDaUint, v);
  w_.end(a);
}

void PacketSequence::annotation_int(std::string_view key, int64_t v) {
  size_t a = begin_annotation(key);
  w_.i64(kDaInt, v);
  w_.end(a);
}

void PacketSequence::annotation_text(std::string_view key, std::string_view v) {
  size_t a = begin_annotation(key);
  w_.u64(kDaStringIid, intern(kAnnotationStrings, v));
  w_.end(a);
}

void PacketSequence::annotation_hex(std::string_view key, uint64_t v) {
  size_t a = begin_annotation(key);
  w_.u64(kDaPointer, v);
  w_.end(a);
}

void PacketSequence::end_event() {
  w_.end(event_);
  if (!pending_.empty()) {
    // The texts this packet used first, in the packet itself.
    static constexpr uint32_t kField[kTables] = {kIdCategories, kIdNames, kIdAnnotationNames, kIdAnnotationStrings};
    size_t d = w_.begin(kInternedData);
    for (const Pending& e : pending_) {
      size_t x = w_.begin(kField[e.table]);
      w_.u64(kIdEntryIid, e.iid);
      w_.str(kIdEntryText, e.text);
      w_.end(x);
    }
    w_.end(d);
    pending_.clear();
  }
  w_.end(packet_);
  maybe_flush();
}

void PacketSequence::counter(int64_t ts_ns, uint64_t track, double value) {
  size_t p = w_.begin(kPacket);
  timestamp(ts_ns);
  w_.u64(kSequenceId, seq_);
  w_.u64(kSequenceFlags, kSeqNeedsIncrementalState);
  size_t te = w_.begin(kTrackEvent);
  w_.u64(kTeType, kCounter);
  w_.u64(kTeTrack, track);
  w_.dbl(kTeDoubleValue, value);
  w_.end(te);
  w_.end(p);
  maybe_flush();
}

void PacketSequence::flush() {
  if (!w_.size()) return;
  if (!compress_) {
    out_(w_.buffer());
    w_.clear();
    return;
  }
  // One packet whose compressed_packets field holds the block (a zlib stream of the packets'
  // bytes, framed as in the file).
  const std::string_view raw = w_.buffer();
  std::string& body = packed_;
  if (!compress_block(raw, &body)) {
    out_(raw);  // rather than lose it
    w_.clear();
    return;
  }
  ProtoWriter frame;
  size_t p = frame.begin(kPacket);
  frame.str(kCompressedPackets, body);
  frame.end(p);
  out_(frame.buffer());
  w_.clear();
}

}  // namespace sigmatrace::exporter::pftrace

// See association.h.
#include "analysis/association.h"

#include <memory>
#include <vector>

#include "analysis/associator_list.h"
#include "format/event_types.h"
#include "format/trace_reader.h"

namespace sigmatrace::analysis {

using format::EventType;

namespace {

// One file's second pass: the events its layers' associators registered go to them; the core
// events (call spans, marks, the count of aggregate entries) are handled here.
class FilePass {
 public:
  FilePass(const ExperimentModel& m, uint32_t pid, FileSink* sink, Aggregates* agg)
      : process_(m.processes[pid]),
        counters_(agg->process[pid]),
        qp_of_(m, process_, &counters_.unknown_qp),
        tagger_(process_, sink, &counters_.range_traffic),
        routed_(process_.ranges.rows().empty() ? sink : &tagger_),
        calls_(routed_, process_.clock),
        file_{m, process_, routed_, *agg, counters_, qp_of_, calls_} {
    for (const AssociatorRegistration* r : kAssociators) {
      associators_.push_back({r, r->make(file_)});
      for (format::AggregateKey k : r->aggregate_keys)
        if (static_cast<size_t>(k) < kKeys) by_key_[static_cast<size_t>(k)] = associators_.back().associator.get();
    }
  }

  FilePassStats run(std::atomic<uint64_t>* bytes_done);

 private:
  struct Registered {
    const AssociatorRegistration* registration;
    std::unique_ptr<LayerAssociator> associator;
  };
  LayerAssociator* associator_of(uint16_t id) const {
    for (const Registered& r : associators_)
      for (const EventIdRange& range : r.registration->events)
        if (range.holds(id)) return r.associator.get();
    return nullptr;
  }
  void core_event(int64_t thread, const format::DecodedEvent& ev);

  static constexpr size_t kKeys = 64;  // AggregateKey values are small
  const ProcessRow& process_;
  ProcessCounters& counters_;
  QpLookup qp_of_;
  RangeTagger tagger_;  // with NVTX ranges, every record passes through it on its way to the sink
  FileSink* routed_;
  CallSpans calls_;
  FileContext file_;
  std::vector<Registered> associators_;
  LayerAssociator* by_key_[kKeys] = {};
  FilePassStats stats_;
};

FilePassStats FilePass::run(std::atomic<uint64_t>* bytes_done) {
  format::TraceFileReader reader;
  std::string error;
  if (!reader.open(process_.file->path, &error)) return stats_;  // was readable in the first pass; now gone
  const format::Schema& schema = reader.schema();
  // Per type of this file's schema: the associator that reads it (null: the core's own, or none).
  // Types whose layout in this file lacks fields we read are skipped (counted), never misread.
  std::vector<bool> layout_ok(schema.types.size(), false);
  std::vector<LayerAssociator*> handler(schema.types.size(), nullptr);
  for (size_t i = 0; i < schema.types.size(); ++i) {
    const format::EventSpec* spec = format::find_builtin_spec(schema.types[i].id);
    layout_ok[i] = spec && schema.types[i].fields.size() >= spec->field_count;
    handler[i] = associator_of(schema.types[i].id);
  }
  format::Chunk chunk;
  format::DecodedEvent ev;
  while (reader.next_chunk(&chunk)) {
    ++stats_.chunks;
    if (bytes_done) *bytes_done += sizeof(chunk.header) + chunk.header.stored_bytes;
    int64_t thread = kNone;
    if (chunk.header.tid) {
      auto it = process_.thread_of_tid.find(chunk.header.tid);
      if (it != process_.thread_of_tid.end()) thread = it->second;
    }
    format::ChunkEventDecoder dec(chunk.header, chunk.payload.data(), chunk.payload.size(), &schema);
    while (dec.next(&ev)) {
      ++stats_.events;
      const size_t type = static_cast<size_t>(ev.desc - schema.types.data());
      if (!layout_ok[type]) {
        ++stats_.skipped_events;
        continue;
      }
      if (LayerAssociator* a = handler[type]) a->on_event(thread, process_.clock.to_ns(ev.tsc), ev);
      else core_event(thread, ev);
    }
    if (dec.failed()) ++stats_.undecodable_chunks;
  }
  for (Registered& r : associators_) r.associator->finish();
  calls_.flush();
  counters_.events += stats_.events;
  if (file_.sink) file_.sink->finish();
  return stats_;
}

void FilePass::core_event(int64_t thread, const format::DecodedEvent& ev) {
  const uint64_t* v = ev.values;
  switch (static_cast<EventType>(ev.type)) {
    case EventType::call_span: calls_.span(thread, ev.tsc, v[0]); break;
    case EventType::user_mark:
      if (file_.sink) file_.sink->mark(MarkRecord{process_.clock.to_ns(ev.tsc), process_.process_id, thread, v[0], v[1]});
      break;
    case EventType::aggregate_entry:  // tid key_kind key_a key_b count bytes: folded by the key's layer
      ++counters_.aggregate_entries;
      if (LayerAssociator* a = v[1] < kKeys ? by_key_[v[1]] : nullptr) a->on_aggregate(ev);  // unknown keys: ignored, as before
      break;
    default: break;
  }
}

}  // namespace

FilePassStats associate_file(const ExperimentModel& model, uint32_t process_id, FileSink* sink, Aggregates* aggregates,
                             std::atomic<uint64_t>* bytes_done) {
  FilePass pass(model, process_id, sink, aggregates);
  return pass.run(bytes_done);
}

}  // namespace sigmatrace::analysis

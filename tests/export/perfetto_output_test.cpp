// trace.pftrace decoded with `protoc --decode` against perfetto_subset.proto (written from Perfetto's
// documented field numbers) and checked for processes and threads (Perfetto's descriptors), QP,
// lane and counter tracks, timed calls, work requests as slices from post to completion, forward
// flows between the right QPs, and counters whose integral is the bytes posted.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "analysis/synthetic_experiment.h"
#include "analysis/analysis_test_util.h"
#include "export/perfetto_writer.h"
#include "support/process_runner.h"
#include "support/temp_dir.h"
#include "support/timeline_check.h"

namespace sigmatrace::test {
namespace {

// A parsed protobuf text-format message: scalar fields (as text) and nested messages.
struct Node {
  std::multimap<std::string, std::string> scalars;
  std::multimap<std::string, Node> children;
  std::string get(const std::string& k) const {
    auto it = scalars.find(k);
    return it == scalars.end() ? "" : it->second;
  }
  uint64_t u(const std::string& k) const { return std::stoull(get(k).empty() ? "0" : get(k)); }
  const Node* child(const std::string& k) const {
    auto it = children.find(k);
    return it == children.end() ? nullptr : &it->second;
  }
};

Node parse_text(std::istringstream& in) {
  Node n;
  std::string line;
  while (std::getline(in, line)) {
    size_t b = line.find_first_not_of(' ');
    if (b == std::string::npos) continue;
    line = line.substr(b);
    if (line == "}") return n;
    if (line.size() > 2 && line.substr(line.size() - 2) == " {") {
      std::string name = line.substr(0, line.size() - 2);
      n.children.emplace(name, parse_text(in));
      continue;
    }
    size_t c = line.find(": ");
    std::string v = line.substr(c + 2);
    if (v.size() >= 2 && v.front() == '"') v = v.substr(1, v.size() - 2);
    n.scalars.emplace(line.substr(0, c), v);
  }
  return n;
}

class PerfettoOutput : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string(SIGMATRACE_PROTOC).empty()) GTEST_SKIP() << "protoc not found (install protobuf-compiler)";
    spec.processes = 4;
    spec.hosts = 2;
    spec.threads_per_process = 2;
    spec.qps_per_pair = 2;
    spec.messages_per_qp = 10;
    truth = analysis::write_synthetic_experiment(dir.path(), spec);
    exporter::AnalysisOptions o;
    o.dir = dir.path();
    o.compress_perfetto = false;  // protoc decodes plain packets only
    run = exporter::run_analysis(o);
    ASSERT_TRUE(run.ok) << run.error;
    expect_valid_timeline(dir.path());
    ProcessResult r = run_process({"/bin/sh", "-c",
                                   std::string(SIGMATRACE_PROTOC) + " --proto_path=" + SIGMATRACE_PROTO_DIR +
                                       " --decode=sigmatrace_pftrace.Trace perfetto_subset.proto < " + (dir / "trace.pftrace")});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    text = r.out;
    std::istringstream in(text);
    Node root = parse_text(in);
    for (auto& [k, p] : root.children) {
      ASSERT_EQ(k, "packet");
      if (const Node* td = p.child("track_descriptor")) tracks[td->u("uuid")] = *td;
      else resolve(p);
    }
  }

  // What Perfetto's importer does with a sequence's incremental state: interned texts become
  // names, categories and annotation keys again, and timestamps on the sequence's clock become
  // REALTIME (its first packet relates the two).
  struct Sequence {
    std::map<std::string, std::map<uint64_t, std::string>> interned;  // table -> iid -> text
    bool has_clock = false;
    uint64_t origin = 0;
  };
  void resolve(Node p) {
    Sequence& sq = sequences[p.u("trusted_packet_sequence_id")];
    if (const Node* id = p.child("interned_data"))
      for (const auto& [table, entry] : id->children) {
        const std::string text = entry.get(table == "debug_annotation_string_values" ? "str" : "name");
        ASSERT_TRUE(sq.interned[table].emplace(entry.u("iid"), text).second) << table << " iid " << entry.u("iid") << " interned twice";
      }
    if (p.child("trace_packet_defaults")) {
      const Node* cs = p.child("clock_snapshot");
      ASSERT_NE(cs, nullptr) << "a sequence's clock is declared with its defaults";
      uint64_t own = 0, realtime = 0;
      for (auto [it, end] = cs->children.equal_range("clocks"); it != end; ++it)
        (it->second.u("clock_id") == 64 ? own : realtime) = it->second.u("timestamp");
      sq.has_clock = true, sq.origin = realtime - own;
    }
    auto te = p.children.find("track_event");
    if (te == p.children.end()) return;
    auto text = [&](const char* table, uint64_t iid) {
      auto& t = sq.interned[table];
      EXPECT_TRUE(t.count(iid)) << table << " iid " << iid << " used before it was interned";
      return t[iid];
    };
    Node& e = te->second;
    if (!e.get("name_iid").empty()) e.scalars.emplace("name", text("event_names", e.u("name_iid")));
    for (auto [it, end] = e.scalars.equal_range("category_iids"); it != end; ++it)
      e.scalars.emplace("categories", text("event_categories", std::stoull(it->second)));
    for (auto& [k, a] : e.children)
      if (k == "debug_annotations" && !a.get("name_iid").empty()) a.scalars.emplace("name", text("debug_annotation_names", a.u("name_iid")));
    if (sq.has_clock && p.get("timestamp_clock_id").empty()) {
      const uint64_t ts = sq.origin + p.u("timestamp");
      p.scalars.erase("timestamp");
      p.scalars.emplace("timestamp", std::to_string(ts));
    }
    events.push_back(std::move(p));
  }
  std::map<uint64_t, Sequence> sequences;
  TempDir dir;
  analysis::SyntheticSpec spec;
  analysis::SyntheticTruth truth;
  exporter::AnalysisRun run;
  std::string text;
  std::map<uint64_t, Node> tracks;
  std::vector<Node> events;
};

uint64_t uuid(exporter::TrackKind k, uint64_t i) { return exporter::track_uuid(k, i); }

TEST_F(PerfettoOutput, DecodesWithOnlyKnownFields) {
  EXPECT_GT(events.size(), 500u);
  // protoc prints fields it does not know by number: there must be none.
  EXPECT_FALSE(std::regex_search(text, std::regex("(^|\\n) *[0-9]+(:| \\{)"))) << "unknown field in trace.pftrace";
}

uint64_t index_of(uint64_t track) { return exporter::track_index(track); }
bool is(uint64_t track, exporter::TrackKind k) { return exporter::track_kind(track) == k; }

TEST_F(PerfettoOutput, ProcessesAndThreadsArePerfettosOwnAndQpsNestUnderThem) {
  using exporter::TrackKind;
  // Hosts: root tracks with their bytes/s; Perfetto places processes at the root itself.
  EXPECT_EQ(tracks.at(uuid(TrackKind::host, 0)).get("name"), "host node0");
  EXPECT_EQ(tracks.at(uuid(TrackKind::host, 1)).get("name"), "host node1");
  EXPECT_EQ(tracks.at(uuid(TrackKind::host, 1)).u("parent_uuid"), 0u);
  EXPECT_EQ(tracks.at(uuid(TrackKind::host_bytes, 1)).u("parent_uuid"), uuid(TrackKind::host, 1));
  EXPECT_EQ(tracks.at(0).u("process_ordering"), 1u);  // explicit: by host, then rank
  for (int p = 0; p < 4; ++p) {
    const Node& t = tracks.at(uuid(TrackKind::process, p));
    const Node* pd = t.child("process");
    ASSERT_NE(pd, nullptr);
    EXPECT_EQ(pd->u("pid"), 1000u + p);
    EXPECT_EQ(pd->get("process_name"), "rank " + std::to_string(p) + " synthetic_app");
    std::multiset<std::string> labels;
    for (auto [it, end] = pd->scalars.equal_range("process_labels"); it != end; ++it) labels.insert(it->second);
    EXPECT_EQ(labels, (std::multiset<std::string>{"host node" + std::to_string(p % 2), "mode full"}));
    EXPECT_EQ(t.u("sibling_order_rank"), (p % 2) * 1000000u + 1 + p);
    EXPECT_EQ(tracks.at(uuid(TrackKind::process_bytes, p)).u("parent_uuid"), uuid(TrackKind::process, p));
  }
  for (int th = 0; th < 8; ++th) {
    const Node* td = tracks.at(uuid(TrackKind::thread, th)).child("thread");
    ASSERT_NE(td, nullptr);
    EXPECT_EQ(td->u("pid"), 1000u + th / 2);
    EXPECT_EQ(td->u("tid"), (1000u + th / 2) * 10 + th % 2);
    EXPECT_EQ(td->get("thread_name"), th % 2 ? "worker" : "main");
  }
  size_t qp_tracks = 0, counters = 0, lanes = 0, completion_tracks = 0;
  for (const auto& [id, t] : tracks) {
    if (is(id, TrackKind::qp)) {
      ++qp_tracks;
      EXPECT_EQ(t.u("parent_uuid"), uuid(TrackKind::process, run.model->qps[index_of(id)].process_id));
    }
    if (is(id, TrackKind::send_lane) || is(id, TrackKind::recv_lane)) {
      ++lanes;
      EXPECT_EQ(t.u("parent_uuid"), uuid(TrackKind::qp, exporter::lane_group(index_of(id))));
      EXPECT_EQ(t.get("name"), is(id, TrackKind::send_lane) ? "send queue" : "receive queue");
      EXPECT_EQ(t.u("sibling_merge_behavior"), 1u) << "lanes of one queue form one track in the UI";
    }
    if (is(id, TrackKind::completions)) {
      ++completion_tracks;
      EXPECT_EQ(t.u("parent_uuid"), uuid(TrackKind::qp, index_of(id)));
    }
    counters += t.child("counter") != nullptr;
  }
  EXPECT_EQ(qp_tracks, 16u);
  EXPECT_EQ(completion_tracks, 16u);
  EXPECT_GE(lanes, 16u + 8u);  // every QP sends; the SEND / WRITE_IMM receivers receive
  EXPECT_EQ(counters, 16u + 4u + 2u);
  // QP track of rank 0's first QP names its peer.
  EXPECT_EQ(tracks.at(uuid(TrackKind::qp, 0)).get("name"),
            "QP " + std::to_string(analysis::synthetic_qp_num(spec, 0, 1, 0)) + " RC mlx5_0 -> rank 1 QP " +
                std::to_string(analysis::synthetic_qp_num(spec, 1, 0, 0)));
  // Every event is on a described track; REALTIME is the trace clock.
  for (const Node& e : events) EXPECT_TRUE(tracks.count(e.child("track_event")->u("track_uuid"))) << e.child("track_event")->u("track_uuid");
  EXPECT_NE(text.find("primary_trace_clock: 1"), std::string::npos);
  EXPECT_NE(text.find("clock_id: 6"), std::string::npos) << "BOOTTIME, so Perfetto relates its file clock to REALTIME";
  expect_valid_timeline(dir.path());
}

TEST_F(PerfettoOutput, WorkRequestsAreSlicesFromPostToCompletionWithForwardFlows) {
  using exporter::TrackKind;
  std::map<int, size_t> by_type;
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> flow_out, flow_in;  // id -> (track, ts)
  std::map<std::string, size_t> instant_names, slice_names;
  std::map<uint64_t, std::vector<std::pair<uint64_t, double>>> counter_points;
  for (const Node& p : events) {
    const Node& e = *p.child("track_event");
    int type = static_cast<int>(e.u("type"));
    ++by_type[type];
    ASSERT_NE(p.u("trusted_packet_sequence_id"), 0u);
    if (type == 3) ++instant_names[e.get("name")];
    if (type == 1) ++slice_names[e.get("name")];
    for (auto [it, end] = e.scalars.equal_range("flow_ids"); it != end; ++it) flow_out[std::stoull(it->second)] = {e.u("track_uuid"), p.u("timestamp")};
    for (auto [it, end] = e.scalars.equal_range("terminating_flow_ids"); it != end; ++it)
      flow_in[std::stoull(it->second)] = {e.u("track_uuid"), p.u("timestamp")};
    if (type == 4) counter_points[e.u("track_uuid")].push_back({p.u("timestamp"), std::stod(e.get("double_counter_value"))});
  }
  // Slices: the four timed set-up calls of each process (open, pd, mr, cq: a call_span each),
  // every send WR (16 QPs x 10) and every receive WR its peer's SEND / WRITE_IMM consumed.
  const size_t sends = 16 * 10, recvs = static_cast<size_t>(truth.flows);
  EXPECT_EQ(by_type[1], by_type[2]);
  EXPECT_EQ(by_type[1], 4u * 4 + sends + recvs);
  EXPECT_EQ(slice_names["ibv_open_device"], 4u);
  EXPECT_EQ(slice_names["RECV"], recvs);
  // Instants: the untimed QP calls (create, 3 modifies, destroy: 16 x 5) and every completion.
  EXPECT_EQ(by_type[3], 16u * 5 + sends + recvs);
  EXPECT_EQ(instant_names["ibv_modify_qp"], 16u * 3);
  // Flows: a WR to its own completion (same QP), and a send that consumed a receive to the
  // receive's completion on the paired QP of the peer; every one forward in time.
  ASSERT_EQ(flow_out.size(), sends + recvs + recvs);
  size_t to_completion = 0, messages = 0;
  for (const auto& [id, out] : flow_out) {
    ASSERT_TRUE(flow_in.count(id)) << id;
    const auto& in = flow_in[id];
    EXPECT_GE(in.second, out.second) << "flow runs backwards";
    ASSERT_TRUE(is(in.first, TrackKind::completions));
    ASSERT_TRUE(is(out.first, TrackKind::send_lane) || is(out.first, TrackKind::recv_lane));
    const uint64_t out_qp = exporter::lane_group(index_of(out.first)), in_qp = index_of(in.first);
    if (out_qp == in_qp) {
      ++to_completion;
    } else {
      ++messages;
      EXPECT_EQ(run.model->qps[out_qp].remote_qp_id, static_cast<int64_t>(in_qp));
      EXPECT_NE(run.model->qps[out_qp].process_id, run.model->qps[in_qp].process_id);
    }
  }
  EXPECT_EQ(to_completion, sends + recvs);
  EXPECT_EQ(messages, recvs);
  // Counters: the integral of bytes/s over time is the bytes posted on the QP (the process, the host).
  ASSERT_EQ(counter_points.size(), 16u + 4u + 2u);
  for (const auto& [track, pts] : counter_points) {
    double integral = 0;
    for (size_t i = 0; i + 1 < pts.size(); ++i) integral += pts[i].second * static_cast<double>(pts[i + 1].first - pts[i].first) / 1e9;
    EXPECT_EQ(pts.back().second, 0.0);
    double bytes = 0;
    auto out_bytes = [](const nlohmann::json& e) { return static_cast<double>(e["bytes_out"].get<uint64_t>() + e["bytes_read"].get<uint64_t>()); };
    if (is(track, TrackKind::qp_bytes)) bytes = out_bytes(run.aggregate_json["qps"][index_of(track)]);
    else if (is(track, TrackKind::process_bytes)) bytes = out_bytes(run.aggregate_json["processes"][index_of(track)]);
    else
      for (const nlohmann::json& p : run.aggregate_json["processes"])
        if (p["host"] == run.model->hosts[index_of(track)]) bytes += out_bytes(p);
    EXPECT_NEAR(integral, bytes, bytes * 1e-9 + 1e-6) << track;
  }
}

// The compressed blocks hold exactly the plain packets, and a Full-mode experiment's timeline
// stays within its size target (25 bytes per traced event).
TEST(PerfettoSize, CompressedBlocksHoldThePlainTimelineInAFewBytesPerEvent) {
  TempDir dir;
  analysis::SyntheticSpec spec;
  spec.processes = 4;
  spec.hosts = 2;
  spec.messages_per_qp = 10000;  // large enough that the per-experiment part (tracks, counters) is small
  analysis::write_synthetic_experiment(dir.path(), spec);
  auto analyze = [&](bool compress) {
    exporter::AnalysisOptions o;
    o.dir = dir.path();
    o.sqlite = false;
    o.compress_perfetto = compress;
    exporter::AnalysisRun run = exporter::run_analysis(o);
    EXPECT_TRUE(run.ok) << run.error;
    const std::string path = dir / (compress ? "compressed.pftrace" : "plain.pftrace");
    EXPECT_EQ(std::rename((dir / "trace.pftrace").c_str(), path.c_str()), 0);
    return std::make_pair(run.pass.events, path);
  };
  const auto [events, plain] = analyze(false);
  const auto [events2, compressed] = analyze(true);
  ASSERT_EQ(events, events2);
  const TimelineReport a = check_timeline(plain, ""), b = check_timeline(compressed, "");
  EXPECT_TRUE(a.problems.empty()) << a.problems.front();
  EXPECT_TRUE(b.problems.empty()) << b.problems.front();
  EXPECT_EQ(a.summary(), b.summary());
  EXPECT_GT(a.slices, events / 2);
  // The same packets (files' blocks interleave in a different order from run to run).
  EXPECT_EQ(uncompressed_pftrace(compressed).size(), uncompressed_pftrace(plain).size());
  const double per_event = static_cast<double>(std::ifstream(compressed, std::ios::ate | std::ios::binary).tellg()) / static_cast<double>(events);
  EXPECT_LE(per_event, 25.0) << "bytes per event of trace.pftrace";
  std::printf("%llu events: %.1f bytes per event compressed, %.1f plain\n", static_cast<unsigned long long>(events), per_event,
              static_cast<double>(std::ifstream(plain, std::ios::ate | std::ios::binary).tellg()) / static_cast<double>(events));
}

TEST(PerfettoIds, PidsAndTidsThatTwoHostsShareAreMadeDistinct) {
  TempDir dir;
  analysis::SyntheticSpec spec;
  spec.processes = 2;
  spec.hosts = 2;
  spec.messages_per_qp = 2;
  analysis::write_synthetic_experiment(dir.path(), spec);
  exporter::AnalysisRun run = analyze_dir(dir.path());
  ASSERT_TRUE(run.ok) << run.error;
  analysis::ExperimentModel m = *run.model;
  exporter::PerfettoIds ids = exporter::perfetto_ids(m);
  EXPECT_EQ(ids.pid, (std::vector<int64_t>{1000, 1001}));  // distinct already: kept
  m.processes[1].pid = m.processes[0].pid;                   // the same pid on two hosts
  for (analysis::ThreadRow& t : m.threads)
    if (t.process_id == 1) t.tid = m.threads[t.thread_id - m.threads.size() / 2].tid;
  ids = exporter::perfetto_ids(m);
  ASSERT_EQ(ids.pid.size(), 2u);
  EXPECT_NE(ids.pid[0], ids.pid[1]);
  EXPECT_EQ(ids.pid[0] % (1 << 22), 1000);
  EXPECT_EQ(ids.pid[1] % (1 << 22), 1000);
  std::set<int64_t> tids(ids.tid.begin(), ids.tid.end());
  EXPECT_EQ(tids.size(), ids.tid.size());
}

}  // namespace
}  // namespace sigmatrace::test

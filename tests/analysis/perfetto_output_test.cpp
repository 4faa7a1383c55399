// trace.pftrace decoded with `protoc --decode` against perfetto_subset.proto (written from Perfetto's
// documented field numbers) and checked for tracks (host -> process -> thread, QP and counter
// tracks), slices, work-request instants, flows between the right QPs, and counters whose integral
// is the bytes posted.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "analysis/synthetic_experiment.h"
#include "analysis_test_util.h"
#include "export/perfetto_writer.h"
#include "support/process_runner.h"
#include "support/temp_dir.h"

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
    run = analyze_dir(dir.path());
    ASSERT_TRUE(run.ok) << run.error;
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
      else if (p.child("track_event")) events.push_back(p);
    }
  }
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

TEST_F(PerfettoOutput, TracksNestHostProcessThreadAndQp) {
  using exporter::TrackKind;
  EXPECT_EQ(tracks.at(uuid(TrackKind::host, 0)).get("name"), "host node0");
  EXPECT_EQ(tracks.at(uuid(TrackKind::host, 1)).get("name"), "host node1");
  for (int p = 0; p < 4; ++p) {
    const Node& t = tracks.at(uuid(TrackKind::process, p));
    EXPECT_EQ(t.u("parent_uuid"), uuid(TrackKind::host, p % 2));
    EXPECT_EQ(t.get("name"), "rank " + std::to_string(p) + " synthetic_app pid " + std::to_string(1000 + p));
    ASSERT_NE(tracks.at(uuid(TrackKind::process_bytes, p)).child("counter"), nullptr);
  }
  for (int th = 0; th < 8; ++th) EXPECT_EQ(tracks.at(uuid(TrackKind::thread, th)).u("parent_uuid"), uuid(TrackKind::process, th / 2));
  size_t qp_tracks = 0, counters = 0;
  for (const auto& [id, t] : tracks) {
    qp_tracks += (id >> 56) == static_cast<uint64_t>(TrackKind::qp);
    counters += t.child("counter") != nullptr;
  }
  EXPECT_EQ(qp_tracks, 16u);
  EXPECT_EQ(counters, 16u + 4u);
  // QP track of rank 0's first QP names its peer.
  EXPECT_EQ(tracks.at(uuid(TrackKind::qp, 0)).get("name"),
            "QP " + std::to_string(analysis::synthetic_qp_num(spec, 0, 1, 0)) + " RC mlx5_0 -> rank 1 QP " +
                std::to_string(analysis::synthetic_qp_num(spec, 1, 0, 0)));
  // Every event is on a described track.
  for (const Node& e : events) EXPECT_TRUE(tracks.count(e.child("track_event")->u("track_uuid"))) << e.child("track_event")->u("track_uuid");
}

TEST_F(PerfettoOutput, SlicesInstantsFlowsAndCounters) {
  std::map<int, size_t> by_type;
  std::map<uint64_t, uint64_t> flow_out_track, flow_in_track;
  std::map<std::string, size_t> instant_names;
  std::map<uint64_t, std::vector<std::pair<uint64_t, double>>> counter_points;
  for (const Node& p : events) {
    const Node& e = *p.child("track_event");
    int type = static_cast<int>(e.u("type"));
    ++by_type[type];
    ASSERT_NE(p.u("trusted_packet_sequence_id"), 0u);
    if (type == 3) ++instant_names[e.get("name")];
    for (auto [it, end] = e.scalars.equal_range("flow_ids"); it != end; ++it) flow_out_track[std::stoull(it->second)] = e.u("track_uuid");
    for (auto [it, end] = e.scalars.equal_range("terminating_flow_ids"); it != end; ++it)
      flow_in_track[std::stoull(it->second)] = e.u("track_uuid");
    if (type == 4) counter_points[e.u("track_uuid")].push_back({p.u("timestamp"), std::stod(e.get("double_counter_value"))});
  }
  // Calls are slices (begin/end pairs): device open, QP create/modify x3/destroy, MR, PD, CQ.
  EXPECT_EQ(by_type[1], by_type[2]);
  EXPECT_EQ(by_type[1], 4u * 4 /*open,pd,mr,cq*/ + 16u * 5 /*qp create, 3 modifies, destroy*/);
  // One instant per WR and per completion: 16 QPs x 10 sends and their completions, plus a receive
  // WR and its completion for each SEND and WRITE_IMM (half of the 4-opcode cycle).
  size_t sends = 16 * 10, recvs = static_cast<size_t>(truth.flows);
  EXPECT_EQ(by_type[3], sends + sends + recvs + recvs);
  EXPECT_EQ(instant_names["SEND"] + instant_names["WRITE_IMM"], recvs);
  EXPECT_EQ(instant_names["RECV"], recvs);
  // Flows: every send that consumes a receive starts one; the peer's receive completion on the
  // paired QP terminates it.
  EXPECT_EQ(flow_out_track.size(), truth.flows);
  EXPECT_EQ(flow_in_track.size(), truth.flows);
  for (const auto& [id, out_track] : flow_out_track) {
    ASSERT_TRUE(flow_in_track.count(id)) << id;
    uint64_t out_qp = (out_track & ((1ull << 56) - 1)) - 1, in_qp = (flow_in_track[id] & ((1ull << 56) - 1)) - 1;
    EXPECT_EQ(run.model->qps[out_qp].remote_qp_id, static_cast<int64_t>(in_qp));
    EXPECT_NE(run.model->qps[out_qp].process_id, run.model->qps[in_qp].process_id);
  }
  // Counters: the integral of bytes/s over time is the bytes posted on the QP (and the process).
  ASSERT_EQ(counter_points.size(), 16u + 4u);
  for (const auto& [track, pts] : counter_points) {
    double integral = 0;
    for (size_t i = 0; i + 1 < pts.size(); ++i) integral += pts[i].second * static_cast<double>(pts[i + 1].first - pts[i].first) / 1e9;
    EXPECT_EQ(pts.back().second, 0.0);
    uint64_t kind = track >> 56, index = (track & ((1ull << 56) - 1)) - 1;
    const nlohmann::json& agg = kind == static_cast<uint64_t>(exporter::TrackKind::qp_bytes) ? run.aggregate_json["qps"][index]
                                                                                               : run.aggregate_json["processes"][index];
    double bytes = static_cast<double>(agg["bytes_out"].get<uint64_t>() + agg["bytes_read"].get<uint64_t>());
    EXPECT_NEAR(integral, bytes, bytes * 1e-9 + 1e-6) << track;
  }
}

}  // namespace
}  // namespace sigmatrace::test

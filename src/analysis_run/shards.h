// Shards of an analysis: the experiment's hosts split into N groups, each analysed on its own
// (`sigmatrace analyze DIR --shard K/N`, e.g. one MPI rank per shard) and merged afterwards
// (`sigmatrace merge DIR`, shard_merge.h). Every shard runs the first pass over all files, so
// process, thread, QP and operation ids, flow ids and Perfetto's sequences and tracks are the same
// as in an unsharded analysis; the second pass covers only the processes of the shard's hosts.
// A shard writes DIR/shards/K-of-N/ with the usual trace.pftrace, trace.sqlite and aggregate.json
// (each usable alone); its aggregate.json also carries, under "shard", the raw counters of its
// processes (before the roll-ups), which is what the merge adds up.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analysis/aggregates.h"
#include "analysis/experiment_model.h"
#include "analysis/pipeline.h"
#include "export/timeline_selection.h"

namespace sigmatrace::exporter {

struct ShardSpec {
  unsigned index = 0, count = 0;  // count 0: not sharded
  bool active() const { return count > 0; }
};

// "K/N" (0 <= K < N), or "mpi": K and N from the launcher's environment (Open MPI's
// OMPI_COMM_WORLD_RANK/SIZE, PMI_RANK/PMI_SIZE, Slurm's SLURM_PROCID/SLURM_NTASKS). False with a
// one-line *error otherwise.
bool parse_shard_spec(const std::string& text, ShardSpec* out, std::string* error);

// The hosts of each shard: the experiment's hosts in their order, cut into `count` contiguous
// groups of about equal events (each group at least one host). False when there are fewer hosts
// than shards.
bool shard_host_groups(const analysis::ExperimentModel& m, unsigned count, std::vector<std::vector<uint32_t>>* groups, std::string* error);
// Items 0..n-1 in order cut into `count` (<= n) contiguous groups of about equal weight, each at
// least one item.
std::vector<std::vector<uint32_t>> contiguous_groups(const std::vector<uint64_t>& weights, unsigned count);
// By process_id: whether the process is on one of the shard's hosts.
std::vector<bool> shard_processes(const analysis::ExperimentModel& m, const std::vector<uint32_t>& hosts);

// DIR/shards/K-of-N
std::string shard_directory(const std::string& experiment_dir, const ShardSpec& s);
constexpr const char* kShardsDirectory = "shards";

// What identifies the experiment a shard was cut from (its merge refuses shards of another).
nlohmann::json experiment_fingerprint(const analysis::ExperimentModel& m);

// The "shard" section of a shard's aggregate.json: which shard, its hosts and processes, the
// timeline request and the outputs it was written with, and the raw counters of its processes and
// their QPs (`raw`: the aggregates as the second pass left them, before Aggregates::finish).
nlohmann::json shard_section(const analysis::ExperimentModel& m, const ShardSpec& s, const std::vector<uint32_t>& hosts,
                             const std::vector<bool>& processes, const analysis::Aggregates& raw, const analysis::SecondPassResult& pass,
                             const TimelineRequest& request, bool perfetto, bool sqlite, uint64_t timeline_left_out,
                             uint64_t timeline_summarised);
// Adds a shard's raw counters into agg (init'ed for m) and pass; false with *error when the
// section names processes or QPs the model does not have, or one that another shard already gave.
bool add_shard_counters(const nlohmann::json& section, const analysis::ExperimentModel& m, analysis::Aggregates* agg,
                        analysis::SecondPassResult* pass, std::vector<bool>* seen, std::string* error);

nlohmann::json timeline_request_json(const TimelineRequest& r);
TimelineRequest timeline_request_from_json(const nlohmann::json& j);

}  // namespace sigmatrace::exporter

// UCX and libfabric operations in the analysis (layers 'ucx' and 'ofi'): the events the ucx and ofi
// providers record become op rows (with their peer process and the transport or provider that
// carried them), slices on their thread, flows between a tagged/stream/active message and the
// receive it was matched to, errors, and traffic in the rank and host matrices.
//
// The second pass's part is an associator (layer_associator.h) registered for the ucx and ofi
// events. Who the peer is comes from the control events of every file, gathered once per
// experiment by the first pass (build_layer_model): UCP endpoints name the peer worker's UUID (ucx_ep_create) which another process
// created (ucx_worker_create); libfabric endpoints name peer addresses (fi_connect, fi_av_insert)
// that another process reported as its own (fi_getname). Messages are matched by (sender, receiver,
// channel, tag) and order: the k-th send from A to B with tag T and the k-th receive posted by B
// for A with tag T (exact mask) get the same flow id, computed by each side alone.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "analysis/aggregates.h"
#include "analysis/records.h"

namespace sigmatrace::analysis {

struct ExperimentModel;
struct LayerModel;

// A UCX/libfabric control event (worker and endpoint creation, interfaces, addresses), kept by
// the first pass for the layer model: its integer fields and its bytes field.
struct LayerControlEvent {
  uint16_t type = 0;
  uint64_t v[4] = {};
  std::string bytes;
};
// The event types the first pass keeps as LayerControlEvents.
bool is_layer_control(uint16_t type);

// Pairs UCP and libfabric endpoints with their peer processes (worker UUIDs, libfabric
// addresses) from the control events the first pass kept, per process id. Called once, at the end
// of the first pass (build_experiment_model).
std::shared_ptr<LayerModel> build_layer_model(const ExperimentModel& m, const std::vector<std::vector<LayerControlEvent>>& events);

// Adds every process's UCX/libfabric traffic (ProcessCounters::layer_traffic) to agg's rank and
// host matrices (before they are summed).
void add_layer_traffic(const ExperimentModel& m, Aggregates* agg);

// All UCX/libfabric traffic of the experiment (after the second pass), for aggregate.json: by
// source process, layer, transport and destination.
std::vector<LayerTraffic> layer_traffic(const Aggregates& agg);

}  // namespace sigmatrace::analysis

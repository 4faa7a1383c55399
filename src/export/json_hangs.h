// aggregate.json's "hangs": where a hung job is stuck (sigmatrace profile --hang-dump). For each
// process that recorded a hang dump: when and why; each of its QPs with work that never completed
// (Full mode), the oldest such operation and its age at the dump, the peer, and what it waits for,
// told from both ends of the connection: a receive whose peer never sent the message, a send
// whose peer never posted the receive, two processes each waiting to receive from the other, an
// operation whose peer ended before the dump; and each GPU kernel running at the dump, with each
// GPU peer: when either GPU last issued to the other, the kernels the peer ran then, and what the
// kernel waits for (a put the peer never issued; each waiting for the other) (docs/hangs.md).
#pragma once
#include <nlohmann/json.hpp>

#include "analysis/aggregates.h"
#include "analysis/experiment_model.h"

namespace sigmatrace::exporter {

nlohmann::json hangs_json(const analysis::ExperimentModel& m, const analysis::Aggregates& agg);

}  // namespace sigmatrace::exporter

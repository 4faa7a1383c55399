// The rows of trace.sqlite that say what the program asked for, as opposed to what the NIC did:
// NCCL's tasks with the network part of each (the nccl_task table; docs/sql.md).
#pragma once
#include "analysis/aggregates.h"
#include "analysis/experiment_model.h"

struct sqlite3;

namespace sigmatrace::exporter {

void insert_nccl_tasks(sqlite3* db, const analysis::ExperimentModel& m, const analysis::Aggregates& agg);

}  // namespace sigmatrace::exporter

// QP topology: pairs every QP with its remote QP across processes and nodes by hardware identity.
// A QP's own address is (its port's GID or LID, its QP number); the address of its peer comes from
// the RTR transition (dest_qp_num, remote LID/GID). Two QPs that name each other form a connection
// between (host, process, device, QP) endpoints. A QP whose peer names another QP, or whose peer
// was not traced, keeps remote_qp_id = kNone (one-sided view: the peer is unknown).
#pragma once

#include "analysis/experiment_model.h"

namespace sigmatrace::analysis {

// Fills QpRow::local, remote_qp_id, connection_id and ExperimentModel::connections.
void pair_queue_pairs(ExperimentModel* model);

}  // namespace sigmatrace::analysis

// softnic's own interface between its libraries: functions of libibverbs that its libmlx5 calls.
// They are exported under the private version node SOFTNIC_PRIVATE_1 (libibverbs.map), the way
// rdma-core's providers import libibverbs' IBVERBS_PRIVATE_* symbols; nothing else may use them.
#pragma once

#define SOFTNIC_PRIVATE_API __attribute__((visibility("default")))

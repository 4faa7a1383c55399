// One line describing a softnic QP's transport state, for the devx engine's state dumps
// (SOFTNIC_DEBUG=2, docs/gda.md). Reads without the engine lock: a dump is taken when something
// is stuck, possibly with the lock held, so the line is a best-effort snapshot.
#pragma once
#include <infiniband/verbs.h>

#include <cstddef>

#include "core/private_api.hpp"

namespace softnic::debug {

// Writes a NUL-terminated line into buf (at most n bytes); returns its length. Safe to call from a
// signal handler (no allocation, no locks).
SOFTNIC_PRIVATE_API size_t describe_qp(const ibv_qp* qp, char* buf, size_t n);

}  // namespace softnic::debug

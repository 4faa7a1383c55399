// RC QP state machine: which attribute masks each transition requires and allows (IBA
// table 91 as the kernel's ib_modify_qp_is_ok enforces it) and attribute range checks.
#pragma once
#include <infiniband/verbs.h>

namespace softnic {

// 0 if moving from cur with (attr, mask) is legal for an RC QP, else the errno a provider
// returns (EINVAL).
int check_rc_transition(ibv_qp_state cur, const ibv_qp_attr* attr, int mask);

}  // namespace softnic

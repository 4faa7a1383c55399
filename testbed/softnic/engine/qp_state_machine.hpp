// RC QP state machine: which attribute masks each transition requires and allows (IBA
// table 91 as the kernel's ib_modify_qp_is_ok enforces it) and attribute range checks.
#pragma once
#include <infiniband/verbs.h>

namespace softnic {

// 0 if moving from cur with (attr, mask) is legal for an RC QP, else the errno a provider
// returns (EINVAL).
int check_rc_transition(ibv_qp_state cur, const ibv_qp_attr* attr, int mask);

// The same for DC objects, with the masks the mlx5 kernel driver requires of them: a DC target
// goes RESET -> INIT (pkey, port, access) -> RTR (address, MTU, RNR timer: exactly those) and
// never to RTS; a DC initiator has no fixed peer (no destination QPN, PSN or address at RTR).
int check_dc_transition(bool target, ibv_qp_state cur, const ibv_qp_attr* attr, int mask);

}  // namespace softnic

// Transition table for RC QPs; see qp_state_machine.hpp.
#include "engine/qp_state_machine.hpp"

#include <cerrno>

#include "core/device_registry.hpp"

namespace softnic {

namespace {
struct Rule {
  bool valid;
  int required;
  int optional;
};

Rule rule(ibv_qp_state from, ibv_qp_state to) {
  // Moving to RESET or ERR is always allowed and takes no other attribute.
  if (to == IBV_QPS_RESET || to == IBV_QPS_ERR) return {true, 0, 0};
  switch (from) {
    case IBV_QPS_RESET:
      if (to == IBV_QPS_INIT)
        return {true, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, 0};
      break;
    case IBV_QPS_INIT:
      if (to == IBV_QPS_INIT) return {true, 0, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS};
      if (to == IBV_QPS_RTR)
        return {true,
                IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
                IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX};
      break;
    case IBV_QPS_RTR:
      if (to == IBV_QPS_RTS)
        return {true,
                IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                    IBV_QP_MAX_QP_RD_ATOMIC,
                IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER |
                    IBV_QP_PATH_MIG_STATE};
      break;
    case IBV_QPS_RTS:
      if (to == IBV_QPS_RTS)
        return {true, 0,
                IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE |
                    IBV_QP_MIN_RNR_TIMER};
      if (to == IBV_QPS_SQD) return {true, 0, IBV_QP_EN_SQD_ASYNC_NOTIFY};
      break;
    case IBV_QPS_SQD:
      if (to == IBV_QPS_RTS)
        return {true, 0,
                IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE |
                    IBV_QP_MIN_RNR_TIMER};
      if (to == IBV_QPS_SQD)
        return {true, 0,
                IBV_QP_PKEY_INDEX | IBV_QP_QKEY | IBV_QP_AV | IBV_QP_MAX_QP_RD_ATOMIC |
                    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_CUR_STATE | IBV_QP_ALT_PATH |
                    IBV_QP_ACCESS_FLAGS | IBV_QP_PORT | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                    IBV_QP_RNR_RETRY | IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE};
      break;
    case IBV_QPS_SQE:
      if (to == IBV_QPS_RTS) return {true, 0, IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS};
      break;
    default:
      break;
  }
  return {false, 0, 0};
}

// The range checks every transition applies.
int check_ranges(const ibv_qp_attr* attr, int mask);

Rule dc_rule(bool target, ibv_qp_state from, ibv_qp_state to) {
  if (to == IBV_QPS_RESET || to == IBV_QPS_ERR) return {true, 0, 0};
  if (from == IBV_QPS_RESET && to == IBV_QPS_INIT)
    return {true, IBV_QP_PKEY_INDEX | IBV_QP_PORT | (target ? IBV_QP_ACCESS_FLAGS : 0), 0};
  if (from == IBV_QPS_INIT && to == IBV_QPS_RTR)
    return target ? Rule{true, IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_MIN_RNR_TIMER, 0}
                  : Rule{true, IBV_QP_PATH_MTU, IBV_QP_AV};
  if (!target && from == IBV_QPS_RTR && to == IBV_QPS_RTS)
    return {true, IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC, 0};
  if (!target && from == IBV_QPS_RTS && to == IBV_QPS_RTS) return {true, 0, 0};
  return {false, 0, 0};
}
}  // namespace

int check_dc_transition(bool target, ibv_qp_state cur, const ibv_qp_attr* attr, int mask) {
  ibv_qp_state next = (mask & IBV_QP_STATE) ? attr->qp_state : cur;
  if (next > IBV_QPS_ERR || cur > IBV_QPS_ERR) return EINVAL;
  Rule r = dc_rule(target, cur, next);
  if (!r.valid) return EINVAL;
  int given = mask & ~IBV_QP_STATE;
  if ((given & r.required) != r.required || (given & ~(r.required | r.optional))) return EINVAL;
  return check_ranges(attr, mask);
}

int check_rc_transition(ibv_qp_state cur, const ibv_qp_attr* attr, int mask) {
  if (mask & IBV_QP_CUR_STATE) {
    if (attr->cur_qp_state != cur && !(cur == IBV_QPS_SQD || cur == IBV_QPS_SQE)) return EINVAL;
    cur = attr->cur_qp_state;
  }
  ibv_qp_state next = (mask & IBV_QP_STATE) ? attr->qp_state : cur;
  if (next > IBV_QPS_ERR || cur > IBV_QPS_ERR) return EINVAL;
  Rule r = rule(cur, next);
  if (!r.valid) return EINVAL;
  int given = mask & ~IBV_QP_STATE;
  if ((given & r.required) != r.required) return EINVAL;
  if (given & ~(r.required | r.optional | IBV_QP_CUR_STATE)) return EINVAL;
  return check_ranges(attr, mask);
}

namespace {
int check_ranges(const ibv_qp_attr* attr, int mask) {
  if ((mask & IBV_QP_PORT) && (attr->port_num < 1 || attr->port_num > kPortCount)) return EINVAL;
  if ((mask & IBV_QP_PKEY_INDEX) && attr->pkey_index >= 128) return EINVAL;
  if ((mask & IBV_QP_PATH_MTU) && (attr->path_mtu < IBV_MTU_256 || attr->path_mtu > IBV_MTU_4096))
    return EINVAL;
  if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && attr->max_rd_atomic > kMaxRdAtomic) return EINVAL;
  if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && attr->max_dest_rd_atomic > kMaxRdAtomic) return EINVAL;
  if ((mask & IBV_QP_RETRY_CNT) && attr->retry_cnt > 7) return EINVAL;
  if ((mask & IBV_QP_RNR_RETRY) && attr->rnr_retry > 7) return EINVAL;
  if ((mask & IBV_QP_MIN_RNR_TIMER) && attr->min_rnr_timer > 31) return EINVAL;
  if ((mask & IBV_QP_TIMEOUT) && attr->timeout > 31) return EINVAL;
  if ((mask & IBV_QP_DEST_QPN) && attr->dest_qp_num > 0xffffff) return EINVAL;
  if ((mask & IBV_QP_AV) && attr->ah_attr.port_num > kPortCount) return EINVAL;
  return 0;
}
}  // namespace

}  // namespace softnic

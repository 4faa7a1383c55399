// Unit tests of softnic's pure parts: the RC QP transition table and the device identity.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <set>

#include "core/device_registry.hpp"
#include "engine/qp_state_machine.hpp"

using softnic::check_rc_transition;

namespace {
constexpr int kInitMask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
constexpr int kRtrMask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                         IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
constexpr int kRtsMask = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                         IBV_QP_MAX_QP_RD_ATOMIC;

ibv_qp_attr attr(ibv_qp_state s) {
  ibv_qp_attr a{};
  a.qp_state = s;
  a.port_num = 1;
  a.path_mtu = IBV_MTU_1024;
  a.ah_attr.port_num = 1;
  return a;
}
}  // namespace

TEST(QpStateMachine, ForwardPathNeedsExactlyTheRequiredAttributes) {
  ibv_qp_attr a = attr(IBV_QPS_INIT);
  EXPECT_EQ(check_rc_transition(IBV_QPS_RESET, &a, kInitMask), 0);
  EXPECT_EQ(check_rc_transition(IBV_QPS_RESET, &a, IBV_QP_STATE), EINVAL);
  EXPECT_EQ(check_rc_transition(IBV_QPS_RESET, &a, kInitMask | IBV_QP_SQ_PSN), EINVAL);
  a = attr(IBV_QPS_RTR);
  EXPECT_EQ(check_rc_transition(IBV_QPS_INIT, &a, kRtrMask), 0);
  EXPECT_EQ(check_rc_transition(IBV_QPS_INIT, &a, kRtrMask & ~IBV_QP_DEST_QPN), EINVAL);
  EXPECT_EQ(check_rc_transition(IBV_QPS_INIT, &a, kRtrMask | IBV_QP_ACCESS_FLAGS), 0);  // optional
  a = attr(IBV_QPS_RTS);
  EXPECT_EQ(check_rc_transition(IBV_QPS_RTR, &a, kRtsMask), 0);
  EXPECT_EQ(check_rc_transition(IBV_QPS_RTR, &a, kRtsMask & ~IBV_QP_TIMEOUT), EINVAL);
}

TEST(QpStateMachine, SkippingStatesFails) {
  ibv_qp_attr a = attr(IBV_QPS_RTS);
  EXPECT_EQ(check_rc_transition(IBV_QPS_RESET, &a, kRtsMask), EINVAL);
  EXPECT_EQ(check_rc_transition(IBV_QPS_INIT, &a, kRtsMask), EINVAL);
  a = attr(IBV_QPS_RTR);
  EXPECT_EQ(check_rc_transition(IBV_QPS_RESET, &a, kRtrMask), EINVAL);
  EXPECT_EQ(check_rc_transition(IBV_QPS_RTS, &a, kRtrMask), EINVAL);
}

TEST(QpStateMachine, ResetAndErrorAreAlwaysReachable) {
  for (ibv_qp_state from : {IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPS_SQD, IBV_QPS_ERR}) {
    ibv_qp_attr a = attr(IBV_QPS_ERR);
    EXPECT_EQ(check_rc_transition(from, &a, IBV_QP_STATE), 0) << from;
    a = attr(IBV_QPS_RESET);
    EXPECT_EQ(check_rc_transition(from, &a, IBV_QP_STATE), 0) << from;
  }
}

TEST(QpStateMachine, AttributeRanges) {
  ibv_qp_attr a = attr(IBV_QPS_INIT);
  a.port_num = 2;
  EXPECT_EQ(check_rc_transition(IBV_QPS_RESET, &a, kInitMask), EINVAL);
  a = attr(IBV_QPS_RTS);
  a.retry_cnt = 8;
  EXPECT_EQ(check_rc_transition(IBV_QPS_RTR, &a, kRtsMask), EINVAL);
  a = attr(IBV_QPS_RTS);
  a.max_rd_atomic = 200;
  EXPECT_EQ(check_rc_transition(IBV_QPS_RTR, &a, kRtsMask), EINVAL);
  a = attr(IBV_QPS_RTR);
  a.path_mtu = ibv_mtu(9);
  EXPECT_EQ(check_rc_transition(IBV_QPS_INIT, &a, kRtrMask), EINVAL);
}

TEST(DeviceRegistry, IdentityIsAConnectXDerivedFromTheHost) {
  setenv("SOFTNIC_DEVICES", "3", 1);
  setenv("SOFTNIC_HOST", "unit-test-host", 1);
  const auto& devs = softnic::devices();
  ASSERT_EQ(devs.size(), 3u);
  std::set<uint64_t> guids;
  std::set<uint16_t> lids;
  for (auto* d : devs) {
    EXPECT_EQ(std::string(d->ibdev.name), "mlx5_" + std::to_string(d->index));
    ibv_device_attr a;
    softnic::fill_device_attr(d, &a);
    EXPECT_EQ(a.vendor_id, 0x02c9u);
    EXPECT_EQ(a.vendor_part_id, 4123u);
    EXPECT_EQ(a.phys_port_cnt, 1);
    ibv_port_attr p;
    softnic::fill_port_attr(d, &p);
    EXPECT_EQ(p.state, IBV_PORT_ACTIVE);
    EXPECT_EQ(p.link_layer, IBV_LINK_LAYER_INFINIBAND);
    EXPECT_GE(p.lid, 1);
    EXPECT_LT(p.lid, 0xc000);
    guids.insert(d->node_guid);
    lids.insert(d->lid);
    EXPECT_EQ(d->node_guid >> 40, 0x0002c9u);  // Mellanox OUI
  }
  EXPECT_EQ(guids.size(), 3u);
  EXPECT_EQ(lids.size(), 3u);
}

// The GoogleTest fixture the host-memory devx tests share: softnic's device, a PD and one
// registered buffer opened once for the suite, devx endpoints made per test and destroyed after
// it, the endpoint helpers' own checks counted as the test's failures.
#pragma once
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <deque>

#include "host_endpoint.hpp"

namespace gda_host {

constexpr int kAccessAll = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

class DevxHostSuite : public ::testing::Test {
 protected:
  static constexpr size_t kMem = 1 << 16;

  static void SetUpTestSuite() {
    pd_ = open_host_device(&list_);
    mem_ = static_cast<uint8_t*>(aligned_alloc(4096, kMem));
    mr_ = ibv_reg_mr(pd_, mem_, kMem, kAccessAll);
    HOST_REQUIRE(mr_);
  }
  static void TearDownTestSuite() {
    ibv_dereg_mr(mr_);
    ibv_dealloc_pd(pd_);
    ibv_close_device(g_ctx);
    ibv_free_device_list(list_);
    free(mem_);
  }
  void SetUp() override {
    g_failures = 0;
    memset(mem_, 0, kMem);
  }
  void TearDown() override {
    for (Endpoint& e : endpoints_) {
      EXPECT_EQ(mlx5dv_devx_obj_destroy(e.qp), 0);
      EXPECT_EQ(mlx5dv_devx_obj_destroy(e.cq), 0);
      mlx5dv_devx_free_uar(e.uar);
      mlx5dv_devx_free_uar(e.cq_uar);
      EXPECT_EQ(mlx5dv_devx_umem_dereg(e.umem), 0);
      free(e.buf);
    }
    endpoints_.clear();
    EXPECT_EQ(g_failures, 0) << "the endpoint helpers' own checks failed (printed above)";
  }

  static inline ibv_device** list_ = nullptr;
  static inline ibv_pd* pd_ = nullptr;
  static inline uint8_t* mem_ = nullptr;
  static inline ibv_mr* mr_ = nullptr;
  std::deque<Endpoint> endpoints_;  // stable addresses
};

}  // namespace gda_host

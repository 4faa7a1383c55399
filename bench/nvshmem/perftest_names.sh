# shellcheck shell=bash
# Sourced by nvshmem_perftests.sh and build_perftests.sh: the NVSHMEM perftests the Fig. 4 table
# runs, which are the ones built when no test is named.
fig4_perftests=(shmem_put_latency shmem_get_latency shmem_atomic_latency shmem_p_ping_pong_latency shmem_put_bw)

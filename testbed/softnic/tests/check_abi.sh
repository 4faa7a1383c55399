#!/bin/bash
# Checks that every versioned verbs/mlx5/efa/rdmacm symbol that the installed consumers import
# (perftest, ibverbs-utils, rdmacm-utils, the real librdmacm) is exported by softnic's
# libraries with the same version node, and that every exported name has a version.
# Usage: check_abi.sh LIBDIR
set -u
libdir=$1
exports=$(mktemp)
trap 'rm -f "$exports"' EXIT
# softnic's librdmacm.so.1 is left out of builds without librdmacm-dev (GPU machines): then what
# consumers import from librdmacm is not softnic's to provide, and is not checked.
namespaces='IBVERBS|MLX5|EFA|RDMACM'
if [ ! -e "$libdir/librdmacm.so.1" ]; then
  namespaces='IBVERBS|MLX5|EFA'
  echo "librdmacm.so.1 was not built here (no librdmacm-dev): RDMACM imports not checked"
fi
for l in libibverbs.so.1 libmlx5.so.1 libefa.so.1 librdmacm.so.1; do
  [ -e "$libdir/$l" ] || continue
  objdump -T "$libdir/$l" | awk 'NF >= 2 && $0 !~ /\*UND\*/ && $(NF-1) ~ /^\(?(IBVERBS|MLX5|EFA|RDMACM)_/ {v=$(NF-1); gsub(/[()]/,"",v); print v, $NF}'
done | sort -u >"$exports"

consumers=()
for b in ibv_devices ibv_devinfo ibv_rc_pingpong ibv_srq_pingpong ibv_uc_pingpong ibv_ud_pingpong \
         ibv_xsrq_pingpong ibv_asyncwatch ib_write_bw ib_write_lat ib_send_bw ib_send_lat ib_read_bw \
         ib_read_lat ib_atomic_bw ib_atomic_lat rping ucmatose udaddy mckey cmtime; do
  p=$(command -v "$b") && consumers+=("$p")
done
for l in /usr/lib/x86_64-linux-gnu/librdmacm.so.1 /usr/lib/x86_64-linux-gnu/libfabric.so.1; do
  [ -e "$l" ] && consumers+=("$l")
done

missing=0
for c in "${consumers[@]}"; do
  while read -r ver name; do
    if ! grep -qx "$ver $name" "$exports"; then
      echo "MISSING: $name@$ver (imported by $c)"
      missing=$((missing + 1))
    fi
  done < <(objdump -T "$c" | awk -v ns="^\\(?($namespaces)_" 'NF >= 2 && /\*UND\*/ && $(NF-1) ~ ns {v=$(NF-1); gsub(/[()]/,"",v); print v, $NF}')
done
# NCCL (dlvsym) and NVSHMEM (dlsym/dlvsym) resolve these at run time, so objdump cannot see them.
for vn in IBVERBS_1.1:ibv_get_device_list IBVERBS_1.1:ibv_free_device_list IBVERBS_1.1:ibv_get_device_name \
          IBVERBS_1.1:ibv_open_device IBVERBS_1.1:ibv_close_device IBVERBS_1.1:ibv_get_async_event \
          IBVERBS_1.1:ibv_ack_async_event IBVERBS_1.1:ibv_query_device IBVERBS_1.1:ibv_query_port \
          IBVERBS_1.1:ibv_query_gid IBVERBS_1.1:ibv_query_qp IBVERBS_1.1:ibv_alloc_pd IBVERBS_1.1:ibv_dealloc_pd \
          IBVERBS_1.1:ibv_reg_mr IBVERBS_1.1:ibv_dereg_mr IBVERBS_1.1:ibv_create_cq IBVERBS_1.1:ibv_destroy_cq \
          IBVERBS_1.1:ibv_create_qp IBVERBS_1.1:ibv_modify_qp IBVERBS_1.1:ibv_destroy_qp IBVERBS_1.1:ibv_fork_init \
          IBVERBS_1.1:ibv_event_type_str IBVERBS_1.8:ibv_reg_mr_iova2 IBVERBS_1.12:ibv_reg_dmabuf_mr \
          IBVERBS_1.10:ibv_query_ece IBVERBS_1.10:ibv_set_ece IBVERBS_1.7:ibv_reg_mr_iova \
          IBVERBS_1.1:ibv_create_ah IBVERBS_1.1:ibv_create_srq IBVERBS_1.1:ibv_destroy_srq IBVERBS_1.1:ibv_destroy_ah \
          MLX5_1.8:mlx5dv_is_supported MLX5_1.2:mlx5dv_init_obj MLX5_1.0:mlx5dv_init_obj MLX5_1.0:mlx5dv_query_device \
          MLX5_1.7:mlx5dv_devx_obj_create MLX5_1.7:mlx5dv_devx_umem_reg MLX5_1.19:mlx5dv_devx_umem_reg_ex \
          MLX5_1.7:mlx5dv_devx_alloc_uar MLX5_1.7:mlx5dv_devx_query_eqn; do
  if ! grep -qx "${vn%%:*} ${vn#*:}" "$exports"; then
    echo "MISSING: ${vn#*:}@${vn%%:*} (looked up at run time by NCCL/NVSHMEM)"
    missing=$((missing + 1))
  fi
done
echo "checked ${#consumers[@]} consumers against $(wc -l <"$exports") exported symbols: $missing missing"
[ $missing -eq 0 ]

// The CREATE statements of trace.sqlite (docs/sql.md describes every column).
// The two tables with a row per traced event are stored compactly and read through views of the
// documented shape: `op_row` and `completion_row` hold times relative to the experiment's start,
// integer codes instead of repeated names (looked up in small tables), no column that the row's id
// already holds (process_id = id >> 40) and a CQ number (per process) instead of its 64-bit handle. A work
// request and the completion that reported it are one op_row row: the completion's own columns are
// c_* (c_delta: completion_id - op_id; its time is the op's ts + dur, its QP, wr_id and status the
// op's, c_thread NULL when the op's thread polled it, c_flow 1 when it carries the op's flow id);
// completion_row holds the others (unmatched, or not exactly recoverable). The views `op` and
// `completion` add the start back and the names (sqlite_views()). The columns that usually hold
// one value come last, with that value as their DEFAULT: a record stops before its trailing
// columns that equal their defaults (SQLite reads them back as the default), 8-11 bytes less per
// op_row row. An op without its completion (c_delta NULL) has the other c_* at their defaults.
// The defaults are also in sqlite_writer.cpp (op_row_defaults, completion_row_defaults).
#pragma once
#include <cstdint>
#include <string>

namespace sigmatrace::exporter {

inline constexpr const char* kSqliteSchema = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE host(host_id INTEGER PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE process(process_id INTEGER PRIMARY KEY, host TEXT, host_id INTEGER, pid INTEGER, rank INTEGER,
  mode TEXT, executable TEXT, file TEXT, complete INTEGER, exit_reason TEXT, events INTEGER, events_dropped INTEGER,
  clock_source TEXT, clock_samples INTEGER, clock_ns_per_tick REAL, clock_max_residual_ns REAL,
  clock_rms_residual_ns REAL, first_ts_ns INTEGER, last_ts_ns INTEGER);
CREATE TABLE thread(thread_id INTEGER PRIMARY KEY, process_id INTEGER, tid INTEGER, name TEXT, events INTEGER);
CREATE TABLE device(device_id INTEGER PRIMARY KEY, process_id INTEGER, name TEXT, node_guid INTEGER, context INTEGER,
  open_ts_ns INTEGER);
CREATE TABLE port(device_id INTEGER, port INTEGER, lid INTEGER, gid TEXT, link_layer INTEGER);
CREATE TABLE qp(qp_id INTEGER PRIMARY KEY, process_id INTEGER, device TEXT, device_id INTEGER, qp_num INTEGER,
  type TEXT, state TEXT, port INTEGER, lid INTEGER, gid TEXT, remote_qp_num INTEGER, remote_lid INTEGER,
  remote_gid TEXT, remote_qp_id INTEGER, connection_id INTEGER, create_ts_ns INTEGER, destroy_ts_ns INTEGER,
  handle INTEGER, gpu_initiated INTEGER, gpu INTEGER, sq_addr INTEGER, log_sq_size INTEGER, uar_page INTEGER);
CREATE TABLE connection(connection_id INTEGER PRIMARY KEY, qp_a INTEGER, qp_b INTEGER, process_a INTEGER,
  process_b INTEGER, host_a TEXT, host_b TEXT, type TEXT, ops_a_to_b INTEGER, bytes_a_to_b INTEGER,
  ops_b_to_a INTEGER, bytes_b_to_a INTEGER);
CREATE TABLE memory_region(mr_id INTEGER PRIMARY KEY, process_id INTEGER, handle INTEGER, pd INTEGER, addr INTEGER,
  length INTEGER, access INTEGER, lkey INTEGER, rkey INTEGER, memory_kind TEXT, gpu_ordinal INTEGER,
  reg_ts_ns INTEGER, dereg_ts_ns INTEGER);
CREATE TABLE op_row(op_id INTEGER PRIMARY KEY, ts INTEGER, dur INTEGER, thread_id INTEGER, qp_id INTEGER, opcode INTEGER,
  bytes INTEGER, peer_process_id INTEGER, wr_id INTEGER, flow_id INTEGER, c_delta INTEGER, status INTEGER,
  c_opcode INTEGER DEFAULT 0, c_byte_len INTEGER DEFAULT 0, c_src_qp INTEGER DEFAULT 0, c_flow INTEGER DEFAULT 0,
  c_cq INTEGER DEFAULT 0, c_imm INTEGER DEFAULT 0, layer INTEGER DEFAULT 0, wr_count INTEGER DEFAULT 1,
  is_call INTEGER DEFAULT 0, c_vendor_err INTEGER DEFAULT 0, c_thread INTEGER, range_id INTEGER,
  nccl_task_id INTEGER);
CREATE TABLE completion_row(completion_id INTEGER PRIMARY KEY, ts INTEGER, thread_id INTEGER, qp_id INTEGER, wr_id INTEGER,
  opcode INTEGER, status INTEGER, byte_len INTEGER, op_id INTEGER, flow_id INTEGER, cq INTEGER DEFAULT 0,
  src_qp INTEGER DEFAULT 0, imm_data INTEGER DEFAULT 0, vendor_err INTEGER DEFAULT 0);
CREATE TABLE layer_name(code INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE opcode_name(code INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE wc_opcode_name(code INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE wc_status_name(code INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE cq(process_id INTEGER, number INTEGER, handle INTEGER, PRIMARY KEY(process_id, number));
CREATE TABLE error(error_id INTEGER PRIMARY KEY, ts_ns INTEGER, process_id INTEGER, thread_id INTEGER, layer TEXT,
  kind TEXT, what TEXT, object INTEGER, error INTEGER, qp_id INTEGER);
CREATE TABLE drops(process_id INTEGER, thread_id INTEGER, tid INTEGER, events_recorded INTEGER,
  events_dropped INTEGER, aggregate_overflow INTEGER);
CREATE TABLE damage(process_id INTEGER, file TEXT, offset INTEGER, bytes INTEGER, reason TEXT);
CREATE TABLE skipped_file(reason TEXT);
CREATE TABLE provider(process_id INTEGER, name TEXT, enabled INTEGER, detail TEXT);
CREATE TABLE doorbell(doorbell_id INTEGER PRIMARY KEY, ts_ns INTEGER, process_id INTEGER, qp_id INTEGER, gpu INTEGER,
  qp_num INTEGER, producer_index INTEGER, delta INTEGER, uar_page INTEGER, blueflame INTEGER, kernel TEXT,
  wqe_class TEXT, wqes INTEGER, range_id INTEGER);
CREATE TABLE gpu_op(op_id INTEGER PRIMARY KEY, gpu INTEGER, kernel TEXT, doorbell_id INTEGER, wqe_index INTEGER,
  wqe_opcode INTEGER, opmod INTEGER, flags INTEGER, remote_addr INTEGER, rkey INTEGER, local_addr INTEGER, lkey INTEGER,
  sges INTEGER, inline INTEGER, imm INTEGER, swap_add INTEGER, compare INTEGER);
CREATE VIEW gpu_ops AS SELECT op.op_id, op.ts_ns, op.process_id, op.qp_id, op.opcode, op.bytes, op.peer_process_id,
  gpu_op.gpu, gpu_op.kernel, gpu_op.doorbell_id, gpu_op.wqe_index, gpu_op.remote_addr, gpu_op.rkey, gpu_op.local_addr,
  gpu_op.lkey, gpu_op.sges, gpu_op.inline, gpu_op.flags, gpu_op.imm, gpu_op.swap_add, gpu_op.compare
  FROM op JOIN gpu_op USING (op_id);
CREATE TABLE kernel_launch(launch_id INTEGER PRIMARY KEY, ts_ns INTEGER, process_id INTEGER, thread_id INTEGER,
  gpu INTEGER, function INTEGER, name TEXT, entry TEXT, grid_x INTEGER, grid_y INTEGER, grid_z INTEGER,
  block_x INTEGER, block_y INTEGER, block_z INTEGER, stream INTEGER, result INTEGER, range_id INTEGER);
CREATE TABLE range(range_id INTEGER PRIMARY KEY, process_id INTEGER, thread_id INTEGER, kind TEXT, domain TEXT,
  name TEXT, path TEXT, category INTEGER, category_name TEXT, color INTEGER, payload TEXT, start_ns INTEGER,
  end_ns INTEGER, dur_ns INTEGER, ended INTEGER, depth INTEGER, parent_id INTEGER);
CREATE TABLE gpu(process_id INTEGER, gpu INTEGER, qps INTEGER, doorbells INTEGER, wqebbs INTEGER, first_ts_ns INTEGER,
  last_ts_ns INTEGER, ops INTEGER, bytes_out INTEGER, bytes_read INTEGER, wqes_recovered INTEGER, lost_wqebbs INTEGER,
  damaged_wqes INTEGER, unread_wqebbs INTEGER);
CREATE TABLE qp_doorbells(qp_id INTEGER PRIMARY KEY, doorbells INTEGER, wqebbs INTEGER, blueflame INTEGER,
  first_ts_ns INTEGER, last_ts_ns INTEGER, data_doorbells INTEGER, control_doorbells INTEGER, wqes_read INTEGER,
  wqes_recovered INTEGER, recovered_wqebbs INTEGER, lost_wqebbs INTEGER, damaged_wqes INTEGER, unread_wqebbs INTEGER,
  index_errors INTEGER, batches INTEGER, wait_ns INTEGER, max_wait_ns INTEGER, from_record INTEGER);
CREATE TABLE qp_stats(qp_id INTEGER, opcode TEXT, ops INTEGER, bytes INTEGER, PRIMARY KEY(qp_id, opcode));
CREATE TABLE nccl_task(task_id INTEGER PRIMARY KEY, process_id INTEGER, thread_id INTEGER, ts_ns INTEGER, label TEXT,
  kind TEXT, func TEXT, seq INTEGER, comm_hash INTEGER, comm_name TEXT, rank INTEGER, nranks INTEGER, count INTEGER,
  datatype TEXT, bytes INTEGER, peer INTEGER, algorithm TEXT, protocol TEXT, channels INTEGER, range_id INTEGER,
  wrs INTEGER, send_wrs INTEGER, recv_wrs INTEGER, wire_bytes INTEGER, algorithm_bytes INTEGER, net_start_ns INTEGER,
  net_end_ns INTEGER, net_dur_ns INTEGER);
)sql";

// No index on the per-event tables: rows are stored by id (by process, then in post order), the
// documented queries scan, and a flow join through the completion view cannot use an index on
// op_row anyway (SQLite builds a transient one for it: measured as fast as with a stored index, at
// 6 bytes per event less).
inline constexpr const char* kSqliteIndexes = R"sql(
CREATE INDEX doorbell_by_qp ON doorbell(qp_id, ts_ns);
CREATE INDEX gpu_op_by_doorbell ON gpu_op(doorbell_id);
)sql";

// The views of the documented shape over the compact tables; start_ns: the experiment's start,
// which the rows' times are relative to.
inline std::string sqlite_views(int64_t start_ns) {
  const std::string start = std::to_string(start_ns);
  return "CREATE VIEW op AS SELECT op_id, ts + " + start + " AS ts_ns, dur AS dur_ns, op_id >> 40 AS process_id, thread_id, "
         "(SELECT name FROM layer_name WHERE code = o.layer) AS layer, qp_id, "
         "(SELECT name FROM opcode_name WHERE code = o.opcode) AS opcode, bytes, peer_process_id, status, wr_id, wr_count, "
         "flow_id, is_call, range_id, nccl_task_id FROM op_row o;\n"
         "CREATE VIEW completion AS SELECT completion_id, ts + " + start + " AS ts_ns, completion_id >> 40 AS process_id, "
         "thread_id, qp_id, (SELECT handle FROM cq WHERE cq.process_id = c.completion_id >> 40 AND number = c.cq) AS cq, wr_id, "
         "CASE WHEN c.status = 0 THEN (SELECT name FROM wc_opcode_name WHERE code = c.opcode) ELSE 'UNDEFINED' END AS opcode, "
         "(SELECT name FROM wc_status_name WHERE code = c.status) AS status, byte_len, imm_data, src_qp, vendor_err, op_id, "
         "flow_id FROM completion_row c "
         "UNION ALL SELECT op_id + c_delta, ts + dur + " + start + ", op_id >> 40, COALESCE(c_thread, thread_id), qp_id, "
         "(SELECT handle FROM cq WHERE cq.process_id = o.op_id >> 40 AND number = o.c_cq), wr_id, "
         "CASE WHEN o.status = 0 THEN (SELECT name FROM wc_opcode_name WHERE code = o.c_opcode) ELSE 'UNDEFINED' END, "
         "(SELECT name FROM wc_status_name WHERE code = o.status), c_byte_len, c_imm, c_src_qp, c_vendor_err, op_id, "
         "CASE WHEN c_flow THEN flow_id END FROM op_row o WHERE c_delta IS NOT NULL;\n";
}

}  // namespace sigmatrace::exporter

-- The arrival of each PE at each device barrier of a kernel, the spread between the first and
-- the last, and which PE came last. A kernel's GPU operations, in doorbell order per PE, are
-- data (WRITE, READ, SEND of more than 8 bytes) or control (atomics, NOPs, puts of at most 8
-- bytes: NVSHMEM's barrier signals); each run of control operations after data is a barrier,
-- and its first operation is when that PE arrived there.
WITH ops AS (
  SELECT o.process_id, o.op_id, o.ts_ns,
         CASE WHEN o.opcode IN ('WRITE', 'WRITE_IMM', 'SEND', 'SEND_IMM', 'READ') AND o.bytes > 8 THEN 0 ELSE 1 END AS control
  FROM gpu_ops o WHERE o.kernel LIKE '%bfs_levels%'),
marked AS (
  SELECT *, control AND NOT coalesce(lag(control) OVER (PARTITION BY process_id ORDER BY ts_ns, op_id), 0) AS starts
  FROM ops),
numbered AS (
  SELECT *, sum(starts) OVER (PARTITION BY process_id ORDER BY ts_ns, op_id) - 1 AS barrier FROM marked),
arrival AS (
  SELECT n.barrier, p.rank AS pe, min(n.ts_ns) AS ts_ns
  FROM numbered n JOIN process p USING (process_id) WHERE n.control GROUP BY n.barrier, p.rank),
ranked AS (
  SELECT *, row_number() OVER (PARTITION BY barrier ORDER BY ts_ns DESC) AS from_last,
         max(ts_ns) OVER (PARTITION BY barrier) - min(ts_ns) OVER (PARTITION BY barrier) AS spread_ns,
         count(*) OVER (PARTITION BY barrier) AS pes
  FROM arrival)
SELECT barrier, pes, spread_ns, pe AS last_pe FROM ranked WHERE from_last = 1 ORDER BY barrier;

-- The bytes each PE put each other PE at each level of the BFS: its data operations (WRITE,
-- READ, SEND of more than 8 bytes) numbered by the barriers before them, as in
-- barrier_arrivals.sql (level L's puts come after barrier L, the one that ended level L-1).
WITH ops AS (
  SELECT o.process_id, o.op_id, o.ts_ns, o.bytes, o.peer_process_id,
         CASE WHEN o.opcode IN ('WRITE', 'WRITE_IMM', 'SEND', 'SEND_IMM', 'READ') AND o.bytes > 8 THEN 0 ELSE 1 END AS control
  FROM gpu_ops o WHERE o.kernel LIKE '%bfs_levels%'),
marked AS (
  SELECT *, control AND NOT coalesce(lag(control) OVER (PARTITION BY process_id ORDER BY ts_ns, op_id), 0) AS starts
  FROM ops),
numbered AS (
  SELECT *, sum(starts) OVER (PARTITION BY process_id ORDER BY ts_ns, op_id) - 1 AS level FROM marked)
SELECT n.level, s.rank AS from_pe, d.rank AS to_pe, count(*) AS puts, sum(n.bytes) AS bytes
FROM numbered n JOIN process s ON s.process_id = n.process_id LEFT JOIN process d ON d.process_id = n.peer_process_id
WHERE NOT n.control GROUP BY n.level, s.rank, d.rank ORDER BY n.level, s.rank, d.rank;

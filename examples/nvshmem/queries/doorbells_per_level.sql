-- Data and control doorbells of each PE at each level of the BFS (doorbell.wqe_class, with
-- SIGMATRACE_DOORBELLS=wqe). A level is a run of data doorbells (its puts) and the control
-- doorbells of the barrier that ends it: each data doorbell after a control one starts the next
-- level. Level -1 is the barrier before the first level.
WITH rung AS (
  SELECT process_id, doorbell_id, ts_ns, wqe_class = 'data' AS data
  FROM doorbell WHERE kernel LIKE '%bfs_levels%' AND wqe_class IS NOT NULL),
marked AS (
  SELECT *, data AND NOT coalesce(lag(data) OVER (PARTITION BY process_id ORDER BY ts_ns, doorbell_id), 0) AS starts
  FROM rung),
numbered AS (
  SELECT *, sum(starts) OVER (PARTITION BY process_id ORDER BY ts_ns, doorbell_id) - 1 AS level FROM marked)
SELECT n.level, p.rank AS pe, sum(n.data) AS data_doorbells, sum(NOT n.data) AS control_doorbells
FROM numbered n JOIN process p USING (process_id)
GROUP BY n.level, p.rank ORDER BY n.level, p.rank;

-- Bytes, operations and time per NVTX range name, each operation in its innermost range (docs/sql.md).
SELECT r.domain, r.name, COUNT(DISTINCT r.range_id) AS ranges,
       (SELECT SUM(dur_ns) FROM range x WHERE x.name = r.name AND x.domain IS r.domain) AS total_ns,
       COUNT(o.op_id) AS ops, SUM(o.bytes) AS bytes
FROM range r LEFT JOIN op o USING (range_id) GROUP BY r.domain, r.name ORDER BY bytes DESC;

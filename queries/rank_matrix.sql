-- Bytes between ranks (the rank matrix), READs counted from the target (docs/sql.md).
SELECT p.rank AS src, q.rank AS dst, SUM(o.bytes) AS bytes
FROM op o JOIN process p ON p.process_id = o.process_id JOIN process q ON q.process_id = o.peer_process_id
WHERE o.opcode NOT IN ('READ', 'RECV') GROUP BY src, dst ORDER BY bytes DESC;

-- The GPU-to-GPU byte matrix of each kernel: what each PE's launches of it put (or read) to
-- each other PE, from the WQEs recovered from the GPUs' send queues. An MoE layer's dispatch
-- and combine, each apart from NVSHMEM's own barriers.
SELECT CASE WHEN o.kernel LIKE '%moe_dispatch%' THEN 'moe_dispatch' ELSE 'moe_combine' END AS kernel, s.rank AS from_pe, d.rank AS to_pe, count(*) AS ops, sum(o.bytes) AS bytes
FROM gpu_ops o JOIN process s ON s.process_id = o.process_id LEFT JOIN process d ON d.process_id = o.peer_process_id
WHERE o.opcode <> 'NOP' AND (o.kernel LIKE '%moe_dispatch%' OR o.kernel LIKE '%moe_combine%')
GROUP BY 1, s.rank, d.rank ORDER BY 1, s.rank, d.rank;

-- NCCL's calls, the slowest network parts first: per call and rank, its work requests, what its
-- sends carried against what its algorithm must move, and how long its network part took (docs/nccl.md).
SELECT label, process_id, bytes, algorithm, protocol, wrs, wire_bytes, algorithm_bytes, net_dur_ns
FROM nccl_task WHERE net_dur_ns IS NOT NULL ORDER BY net_dur_ns DESC LIMIT 20;

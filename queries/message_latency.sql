-- Send -> receive latency per connection (Full mode), through the flow ids (docs/sql.md).
SELECT s.process_id AS sender, c.process_id AS receiver, COUNT(*) AS messages,
       AVG(c.ts_ns - s.ts_ns) AS avg_ns, MAX(c.ts_ns - s.ts_ns) AS max_ns
FROM op s JOIN completion c ON c.flow_id = s.flow_id
WHERE s.opcode != 'RECV' GROUP BY sender, receiver;

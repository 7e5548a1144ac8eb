-- The fleet knows its hosts (issue 39, doc/agents.md): agent_ready()
-- takes an agent's labels (a flat JSON object of at most 16 strings, keys
-- of [a-z0-9_.-]) and its address (how other hosts reach it; default its
-- name); a bad one is 22023 and writes nothing, neither a new agent nor a
-- change of a registered one.  The view agents shows them, with since
-- when an agent drains and its free instances; drain_agent() sets
-- state_changed_at when the state changes, and only then; the table's
-- CHECKs refuse what agent_ready refuses (23514); metrics() has a series
-- per agent.  Times are never printed.

\i test/regress/include/helpers.sql

CREATE ROLE regress_ah_host NOLOGIN IN ROLE quota_sched_agent;
CREATE ROLE regress_ah_ops NOLOGIN IN ROLE quota_sched_admin;
CREATE ROLE regress_ah_alice NOLOGIN IN ROLE quota_sched_user;

INSERT INTO quota_sched.service_environment (name, capacity_limits) VALUES ('ah_env', '{"gpu": 8}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('ah_queue', 'ah_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('ah_queue', 'ah_share', '{"gpu": 8}', 'RESERVE');
INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('regress_ah_host', 'ah_queue');

-- pg_temp.ah_rows(): the agent table's rows of the test, as text, so that
-- a refused call is seen to have written nothing.
CREATE FUNCTION pg_temp.ah_rows() RETURNS text LANGUAGE sql AS $$
	SELECT coalesce(string_agg(concat_ws(' ', a.name, a.instances, a.state, a.labels, a.address,
										 a.last_seen, a.state_changed_at), E'\n' ORDER BY a.name), '')
	  FROM quota_sched.agent a WHERE a.job_queue = 'ah_queue'
$$;

-- Registration with labels and an address: stored as given, and the view
-- shows them; without either, no labels and the agent's name as address.
SET ROLE regress_ah_host;
SELECT name, instances, labels, address
  FROM quota_sched.agent_ready('ah_a', 'ah_queue', 'gpu', 4, '{"rack": "r1", "nvlink": "nvl-3"}',
							   '10.0.0.1');
SELECT name, instances, labels, address FROM quota_sched.agent_ready('ah_b', 'ah_queue', 'gpu', 2);
SELECT name, labels, address FROM quota_sched.agent_ready('ah_c', 'ah_queue', 'gpu', NULL,
														  address => 'gpu-c.example.com');
SELECT agent, instances, labels, address, draining_since IS NULL AS active, free_instances
  FROM quota_sched.agents ORDER BY agent;
RESET ROLE;
-- state_changed_at: the registration's time (a refresh keeps it)
SELECT name, state_changed_at = registered_at AS changed_at_registration
  FROM quota_sched.agent WHERE job_queue = 'ah_queue' ORDER BY name;

-- Bad labels and addresses, each 22023 naming the key or value at fault,
-- for a new agent (ah_x) and for a registered one (ah_a): nothing written.
CREATE TEMP TABLE ah_before AS SELECT pg_temp.ah_rows() AS rows;
SET ROLE regress_ah_host;
SELECT pg_temp.refused(format('SELECT quota_sched.agent_ready(%L, ''ah_queue'', ''gpu'', 4, %s)',
							  agent, args)) AS refused
  FROM (VALUES ('ah_x'), ('ah_a')) AS a(agent),
	   (VALUES (1, $$NULL$$),
			   (2, $$'[]'$$),
			   (3, $$'"rack"'$$),
			   (4, $$'null'$$),
			   (5, $$'{"Rack": "r1"}'$$),
			   (6, $$'{"": "r1"}'$$),
			   (7, $$'{"rack one": "r1"}'$$),
			   (8, $$jsonb_build_object(repeat('k', 64), 'v')$$),
			   (9, $$'{"rack": 1}'$$),
			   (10, $$'{"rack": null}'$$),
			   (11, $$'{"rack": true}'$$),
			   (12, $$'{"rack": ["r1"]}'$$),
			   (13, $$'{"rack": {"row": "r1"}}'$$),
			   (14, $$'{"rack": ""}'$$),
			   (15, $$jsonb_build_object('rack', repeat('r', 129))$$),
			   (16, $$(SELECT jsonb_object_agg('k' || i, 'v') FROM generate_series(1, 17) i)$$),
			   (17, $$'{}', ''$$),
			   (18, $$'{}', 'gpu a'$$),
			   (19, $$'{}', E'gpu\ta'$$),
			   (20, $$'{}', E'gpu\x01a'$$),
			   (21, $$'{}', repeat('a', 254)$$)) AS b(n, args)
 ORDER BY a.agent, b.n;
RESET ROLE;
SELECT pg_temp.ah_rows() = (SELECT rows FROM ah_before) AS nothing_written,
	   (SELECT count(*) FROM quota_sched.agent WHERE name = 'ah_x') AS ah_x_rows;

-- The limits themselves are taken: 16 labels, a key of 63 characters, a
-- value of 128 characters (non-ASCII counts by character), an address of
-- 253 characters; an IPv6 address.
SET ROLE regress_ah_host;
SELECT name, (SELECT count(*) FROM jsonb_object_keys(labels)) AS labels
  FROM quota_sched.agent_ready('ah_x', 'ah_queue', 'gpu', 1,
							   (SELECT jsonb_object_agg('k' || i, 'v') FROM generate_series(1, 16) i));
SELECT name, length((SELECT min(k) FROM jsonb_object_keys(labels) k)) AS key_length,
	   length(labels->>repeat('k', 63)) AS value_length, length(address) AS address_length
  FROM quota_sched.agent_ready('ah_x', 'ah_queue', 'gpu', 1,
							   jsonb_build_object(repeat('k', 63), repeat(U&'\00e9', 128)),
							   repeat('a', 253));
SELECT name, address FROM quota_sched.agent_ready('ah_x', 'ah_queue', 'gpu', 1, '{"a.b_c-9": "x"}',
												  'fe80::1');
-- A refresh restates what the agent offers: without labels or address,
-- none and its name again.
SELECT name, labels, address FROM quota_sched.agent_ready('ah_x', 'ah_queue', 'gpu', 1);
RESET ROLE;

-- drain_agent: state_changed_at moves when the state changes, and only
-- then; the view shows draining_since while it drains; agent_ready keeps
-- the state and its time.
UPDATE quota_sched.agent SET state_changed_at = state_changed_at - interval '1 hour'
 WHERE name = 'ah_b';
SELECT state_changed_at AS t0 FROM quota_sched.agent WHERE name = 'ah_b' \gset
SET ROLE regress_ah_ops;
SELECT name, state, state_changed_at > :'t0' AS changed_now FROM quota_sched.drain_agent('ah_b');
RESET ROLE;
UPDATE quota_sched.agent SET state_changed_at = state_changed_at - interval '1 hour'
 WHERE name = 'ah_b';
SELECT state_changed_at AS t1 FROM quota_sched.agent WHERE name = 'ah_b' \gset
SET ROLE regress_ah_ops;
SELECT name, state, state_changed_at = :'t1' AS kept FROM quota_sched.drain_agent('ah_b');
SELECT agent, state, draining_since = :'t1' AS draining_since_changed_at
  FROM quota_sched.agents WHERE agent = 'ah_b';
RESET ROLE;
SET ROLE regress_ah_host;
SELECT name, state, state_changed_at = :'t1' AS kept
  FROM quota_sched.agent_ready('ah_b', 'ah_queue', 'gpu', 2);
RESET ROLE;
SET ROLE regress_ah_ops;
SELECT name, state, state_changed_at > :'t1' AS changed_now
  FROM quota_sched.drain_agent('ah_b', false);
SELECT agent, state, draining_since FROM quota_sched.agents WHERE agent = 'ah_b';
SELECT state_changed_at AS t2 FROM quota_sched.agent WHERE name = 'ah_b' \gset
SELECT name, state, state_changed_at = :'t2' AS kept FROM quota_sched.drain_agent('ah_b', false);
RESET ROLE;

-- held and free instances: ah_a (4) holds a job of 3, then of 3 + 2 more
-- than it has (a claim by name does not look at instances): free is at
-- least 0.  ah_c has no bound: no free instances.
SET ROLE regress_ah_alice;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('ah_1', 'ah_queue', 'ah_share', 'gpu', 3), ('ah_2', 'ah_queue', 'ah_share', 'gpu', 2);
RESET ROLE;
SELECT name, action FROM pg_temp.pass('ah_queue');
SET ROLE regress_ah_host;
SELECT name, state FROM quota_sched.claim('ah_a', 'ah_queue', 'gpu', max_jobs => 1);
SELECT agent, instances, held_instances, free_instances FROM quota_sched.agents
 WHERE agent IN ('ah_a', 'ah_c') ORDER BY agent;
SELECT name, state FROM quota_sched.claim('ah_a', 'ah_queue', 'gpu', max_jobs => 1);
SELECT agent, instances, held_instances, free_instances FROM quota_sched.agents
 WHERE agent IN ('ah_a', 'ah_c') ORDER BY agent;
RESET ROLE;

-- metrics(): a series per agent and unit; the instances and the free
-- instances of a bounded agent only, the time it drains since of a
-- draining one only (ah_b drained again, ah_c not live).  Times masked.
SELECT state FROM quota_sched.drain_agent('ah_b');
UPDATE quota_sched.agent SET last_seen = now() - interval '2 minutes' WHERE name = 'ah_c';
SELECT regexp_replace(m.line, '(_timestamp_seconds\{.*\}) [0-9.]+$', '\1 T') AS sample
  FROM regexp_split_to_table(quota_sched.metrics(), E'\n') AS m(line)
 WHERE m.line LIKE 'quota\_sched\_agent\_%' AND m.line LIKE '%agent="ah\_%'
 ORDER BY m.line COLLATE "C";
SELECT count(*) AS families FROM regexp_split_to_table(quota_sched.metrics(), E'\n') AS line
 WHERE line LIKE '# TYPE quota\_sched\_agent\_% gauge';
SELECT (regexp_match(quota_sched.metrics(),
					 'quota_sched_agent_draining_since_timestamp_seconds\{agent="ah_b",[^}]*\} ([0-9.]+)'))[1]::numeric
	   = extract(epoch FROM (SELECT state_changed_at FROM quota_sched.agent WHERE name = 'ah_b'))
	   AS draining_since_is_state_changed_at;

-- The table's CHECKs: the same rules, 23514 (only the agents' functions
-- write the table).
SELECT pg_temp.refused($$UPDATE quota_sched.agent SET labels = '{"Rack": "r1"}' WHERE name = 'ah_a'$$);
SELECT pg_temp.refused($$UPDATE quota_sched.agent SET labels = '{"rack": 1}' WHERE name = 'ah_a'$$);
SELECT pg_temp.refused($$UPDATE quota_sched.agent SET labels = '[]' WHERE name = 'ah_a'$$);
SELECT pg_temp.refused($$UPDATE quota_sched.agent SET address = 'a b' WHERE name = 'ah_a'$$);
SELECT pg_temp.refused($$UPDATE quota_sched.agent SET address = '' WHERE name = 'ah_a'$$);
SELECT pg_temp.refused($$UPDATE quota_sched.agent SET labels = NULL WHERE name = 'ah_a'$$);

-- Clean up: the agents go with their queue.
SET session_replication_role = replica;
UPDATE quota_sched.job SET state = 'FAILED' WHERE job_queue = 'ah_queue';
RESET session_replication_role;
DELETE FROM quota_sched.held_capacity WHERE job_queue = 'ah_queue';
DELETE FROM quota_sched.job_queue WHERE name = 'ah_queue';
SELECT count(*) AS agents_left FROM quota_sched.agent WHERE name LIKE 'ah\_%';
DELETE FROM quota_sched.service_environment WHERE name = 'ah_env';
DROP FUNCTION pg_temp.ah_rows();
DROP ROLE regress_ah_host, regress_ah_ops, regress_ah_alice;

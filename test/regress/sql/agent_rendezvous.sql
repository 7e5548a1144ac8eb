-- A multi-host job's rendezvous (doc/agents.md "Running a multi-host
-- job"): job_peers(), what each agent a job is placed on learns of the
-- job's parts (rank, agent, address, instances, claimed, rank 0's port),
-- and attempt_started()'s port, which only the agent holding rank 0
-- gives (1 to 65535; the same port again is a no-op, another is
-- refused).  Who may ask: an agent the job is placed on now, as the login
-- that claimed its part (or registered the agent, before its claim), or
-- an admin; a job that is not placed on hosts gives its one part.
-- Refusals are shown as "SQLSTATE: message"; ids and times are not
-- printed.

\i test/regress/include/helpers.sql

CREATE ROLE regress_rdv_host NOLOGIN IN ROLE quota_sched_agent;
CREATE ROLE regress_rdv_other NOLOGIN IN ROLE quota_sched_agent;
CREATE ROLE regress_rdv_admin NOLOGIN IN ROLE quota_sched_admin, quota_sched_agent;
INSERT INTO quota_sched.agent_access (login, job_queue)
VALUES ('regress_rdv_host', NULL), ('regress_rdv_other', NULL);

INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('rdv_env', '{"gpu": 8, "cpu": 8}');
INSERT INTO quota_sched.job_queue (name, service_environment)
VALUES ('rdv_queue', 'rdv_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('rdv_queue', 'rdv_share', '{"gpu": 8, "cpu": 8}', 'RESERVE');
-- two hosts of 4 gpus, and one of 2 (too small for a part of 4) of another login
SET ROLE regress_rdv_host;
SELECT name FROM quota_sched.agent_ready('rdv_h1', 'rdv_queue', 'gpu', 4, address => '10.0.0.1');
SELECT name FROM quota_sched.agent_ready('rdv_h2', 'rdv_queue', 'gpu', 4, address => '10.0.0.2');
SET ROLE regress_rdv_other;
SELECT name FROM quota_sched.agent_ready('rdv_h3', 'rdv_queue', 'gpu', 2, address => '10.0.0.3');
RESET ROLE;

INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count,
							 instances_per_host)
VALUES ('rdv_ddp', 'rdv_queue', 'rdv_share', 'gpu', 8, 4);
SELECT id AS job_id FROM quota_sched.job WHERE name = 'rdv_ddp' \gset
SELECT * FROM pg_temp.pass('rdv_queue');
SELECT state, part_agents FROM quota_sched.job WHERE name = 'rdv_ddp';

------------------------------------------------------------------------
-- Placed, not claimed: each agent of the job sees both parts, as the
-- login it registered with; neither is claimed, no port yet.
------------------------------------------------------------------------
SET ROLE regress_rdv_host;
SELECT * FROM quota_sched.job_peers(:job_id, 'rdv_h1');
SELECT * FROM quota_sched.job_peers(:job_id, 'rdv_h2');
-- not for another login (rdv_h1 is regress_rdv_host's), nor for an agent
-- the job is not placed on, whichever login asks
SET ROLE regress_rdv_other;
SELECT pg_temp.refused(format($$SELECT * FROM quota_sched.job_peers(%s, 'rdv_h1')$$, :job_id));
SELECT pg_temp.refused(format($$SELECT * FROM quota_sched.job_peers(%s, 'rdv_h3')$$, :job_id));
SET ROLE regress_rdv_host;
SELECT pg_temp.refused(format($$SELECT * FROM quota_sched.job_peers(%s, 'rdv_h3')$$, :job_id));
SELECT pg_temp.refused(format($$SELECT * FROM quota_sched.job_peers(%s, 'nobody')$$, :job_id));
-- bad input: an unknown job P0002 (no_data_found), nulls and a bad agent name 22023
SELECT pg_temp.refused($$SELECT * FROM quota_sched.job_peers(-1, 'rdv_h1')$$);
SELECT pg_temp.refused($$SELECT * FROM quota_sched.job_peers(NULL, 'rdv_h1')$$);
SELECT pg_temp.refused(format($$SELECT * FROM quota_sched.job_peers(%s, NULL)$$, :job_id));
SELECT pg_temp.refused(format($$SELECT * FROM quota_sched.job_peers(%s, E'rdv_h1\n')$$, :job_id));
-- an admin may ask for any agent the job is placed on
SET ROLE regress_rdv_admin;
SELECT rank, peer_agent, claimed FROM quota_sched.job_peers(:job_id, 'rdv_h2');

------------------------------------------------------------------------
-- rdv_h1 claims its part (rank 0): it is claimed, rdv_h2's is not yet.
------------------------------------------------------------------------
SET ROLE regress_rdv_host;
SELECT name, state FROM quota_sched.claim('rdv_h1', 'rdv_queue', 'gpu', start => true);
SELECT rank, peer_agent, claimed, port FROM quota_sched.job_peers(:job_id, 'rdv_h2');
-- rdv_h2 has not claimed: it may not give a port (its part is not held)
SELECT pg_temp.refused(format(
	$$SELECT quota_sched.attempt_started(%s, 'rdv_h2', 1, 'host2', NULL, port => 29500)$$, :job_id));
SELECT name, state FROM quota_sched.claim('rdv_h2', 'rdv_queue', 'gpu', start => true);
SELECT rank, peer_agent, claimed, port FROM quota_sched.job_peers(:job_id, 'rdv_h1');
-- once claimed, the part is the claiming login's: another login may not ask
SET ROLE regress_rdv_other;
SELECT pg_temp.refused(format($$SELECT * FROM quota_sched.job_peers(%s, 'rdv_h2')$$, :job_id));
SET ROLE regress_rdv_host;

------------------------------------------------------------------------
-- The port: from rank 0's agent only (55000 from rank 1's), 1 to 65535
-- (22023); the same port again is a no-op, another is refused (55000),
-- and a call without a port keeps it.
------------------------------------------------------------------------
SELECT pg_temp.refused(format(
	$$SELECT quota_sched.attempt_started(%s, 'rdv_h2', 1, 'host2', NULL, port => 29500)$$, :job_id));
SELECT pg_temp.refused(format(
	$$SELECT quota_sched.attempt_started(%s, 'rdv_h1', 1, 'host1', NULL, port => 0)$$, :job_id));
SELECT pg_temp.refused(format(
	$$SELECT quota_sched.attempt_started(%s, 'rdv_h1', 1, 'host1', NULL, port => 65536)$$, :job_id));
SELECT pg_temp.refused(format(
	$$SELECT quota_sched.attempt_started(%s, 'rdv_h1', 1, 'host1', NULL, port => -1)$$, :job_id));
SELECT rank, host, port
  FROM quota_sched.attempt_started(:job_id, 'rdv_h1', 1, 'host1', NULL, port => 29500);
SELECT rank, peer_agent, address, claimed, port FROM quota_sched.job_peers(:job_id, 'rdv_h2');
SELECT rank, host, port
  FROM quota_sched.attempt_started(:job_id, 'rdv_h1', 1, 'host1', NULL, port => 29500);
SELECT pg_temp.refused(format(
	$$SELECT quota_sched.attempt_started(%s, 'rdv_h1', 1, 'host1', NULL, port => 29501)$$, :job_id));
SELECT rank, host, log_path, port
  FROM quota_sched.attempt_started(:job_id, 'rdv_h1', 1, NULL, '/var/log/qs/1.log');
-- rank 1's agent records its own start, without a port
SELECT rank, host, port FROM quota_sched.attempt_started(:job_id, 'rdv_h2', 1, 'host2', NULL);
-- a port for an attempt that is over is a no-op (null)
SELECT attempt_started IS NULL AS over
  FROM quota_sched.attempt_started(:job_id, 'rdv_h1', 9, 'host1', NULL, port => 29501);
-- another login may not give the port of rdv_h1's part
SET ROLE regress_rdv_other;
SELECT pg_temp.refused(format(
	$$SELECT quota_sched.attempt_started(%s, 'rdv_h1', 1, 'host1', NULL, port => 29500)$$, :job_id));
RESET ROLE;
SELECT rank, agent, port FROM quota_sched.job_parts WHERE job_id = :job_id ORDER BY rank;
SELECT rank, agent, host, port FROM quota_sched.job_attempts WHERE job_id = :job_id ORDER BY rank;

------------------------------------------------------------------------
-- The job ends: no agent is placed on it now, job_peers is refused.
------------------------------------------------------------------------
SET ROLE regress_rdv_host;
SELECT state FROM quota_sched.report(:job_id, 'rdv_h1', 'SUCCEEDED', attempt => 1, exit_code => 0);
SELECT state FROM quota_sched.report(:job_id, 'rdv_h2', 'SUCCEEDED', attempt => 1, exit_code => 0);
SELECT pg_temp.refused(format($$SELECT * FROM quota_sched.job_peers(%s, 'rdv_h1')$$, :job_id));
RESET ROLE;

------------------------------------------------------------------------
-- A job of a unit that is not placed (no cpu agent registered): its one
-- part, rank 0 on the agent that claimed it, whose address is its name
-- (not registered); its port is kept in job_attempt, the same rules.
------------------------------------------------------------------------
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('rdv_one', 'rdv_queue', 'rdv_share', 'cpu', 2);
SELECT id AS one_id FROM quota_sched.job WHERE name = 'rdv_one' \gset
SELECT * FROM pg_temp.pass('rdv_queue');
SET ROLE regress_rdv_host;
SELECT pg_temp.refused(format($$SELECT * FROM quota_sched.job_peers(%s, 'rdv_c1')$$, :one_id));
SELECT name, state FROM quota_sched.claim('rdv_c1', 'rdv_queue', 'cpu', start => true);
SELECT * FROM quota_sched.job_peers(:one_id, 'rdv_c1');
SELECT rank, port FROM quota_sched.attempt_started(:one_id, 'rdv_c1', 1, 'cpuhost', NULL, port => 41000);
SELECT rank, peer_agent, port FROM quota_sched.job_peers(:one_id, 'rdv_c1');
SELECT rank, port FROM quota_sched.attempt_started(:one_id, 'rdv_c1', 1, 'cpuhost', NULL, port => 41000);
SELECT pg_temp.refused(format(
	$$SELECT quota_sched.attempt_started(%s, 'rdv_c1', 1, 'cpuhost', NULL, port => 41001)$$, :one_id));
SELECT pg_temp.refused(format($$SELECT * FROM quota_sched.job_peers(%s, 'rdv_c2')$$, :one_id));
SET ROLE regress_rdv_other;
SELECT pg_temp.refused(format($$SELECT * FROM quota_sched.job_peers(%s, 'rdv_c1')$$, :one_id));
SELECT pg_temp.refused(format(
	$$SELECT quota_sched.attempt_started(%s, 'rdv_c1', 1, 'cpuhost', NULL, port => 41000)$$, :one_id));
RESET ROLE;
-- released and run again under the same number: a new run, its port anew
SET ROLE regress_rdv_host;
SELECT state FROM quota_sched.release(:one_id, 'rdv_c1', 'restarting');
RESET ROLE;
SELECT * FROM pg_temp.pass('rdv_queue');
SET ROLE regress_rdv_host;
SELECT name, state FROM quota_sched.claim('rdv_c1', 'rdv_queue', 'cpu', start => true);
SELECT rank, peer_agent, port FROM quota_sched.job_peers(:one_id, 'rdv_c1');
SELECT rank, port FROM quota_sched.attempt_started(:one_id, 'rdv_c1', 1, 'cpuhost', NULL, port => 41001);
SELECT state FROM quota_sched.report(:one_id, 'rdv_c1', 'SUCCEEDED', attempt => 1, exit_code => 0);
RESET ROLE;

SELECT * FROM quota_sched.held_capacity_drift();

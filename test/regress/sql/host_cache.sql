-- The cache of hosts (issue 39, item 6; src/pass/host_cache.c): a pass
-- reads a queue's agents again only when they changed in a way that
-- changes its hosts, or when a live agent's lease may have run out.  Each
-- of a registration, a drain (and its end), a label change, a forget, a
-- lease that runs out and a revival changes where the next pass places a
-- job; a heartbeat of a live agent does not make the pass read the agents
-- again (quota_sched.host_cache_reloads(): how many times this backend
-- read them).  A probe job of 3 gpus, with same_label nvlink, fits only
-- on hc_2 (4 gpus, label nvlink); hc_1 has 2 gpus and no label.

\i test/regress/include/helpers.sql

CREATE ROLE regress_hc_host NOLOGIN IN ROLE quota_sched_agent;
INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('regress_hc_host', NULL);

INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('hc_env', '{"gpu": 16}');
INSERT INTO quota_sched.job_queue (name, service_environment, claim_timeout)
VALUES ('hc_queue', 'hc_env', '1 hour');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('hc_queue', 'hc_a', '{"gpu": 16}', 'RESERVE');

-- probe(): submits a probe job, runs the pass, and returns where the
-- probe went (or why it waits) and how many times this backend read the
-- queue's agents since the last probe; the probe is then terminated.
CREATE TEMP TABLE hc_reloads AS SELECT quota_sched.host_cache_reloads() AS n;
CREATE FUNCTION pg_temp.probe(OUT placed text[], OUT reason text, OUT reloads bigint)
LANGUAGE plpgsql AS $$
DECLARE
	probe bigint;
BEGIN
	INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count,
								 same_label)
	VALUES ('hc_probe', 'hc_queue', 'hc_a', 'gpu', 3, 'nvlink') RETURNING id INTO probe;
	PERFORM quota_sched.run_pass('hc_queue');
	SELECT part_agents, status_reason INTO placed, reason FROM quota_sched.job WHERE id = probe;
	PERFORM quota_sched.terminate(probe);
	DELETE FROM quota_sched.job WHERE id = probe;
	SELECT quota_sched.host_cache_reloads() - n INTO reloads FROM hc_reloads;
	UPDATE hc_reloads SET n = quota_sched.host_cache_reloads();
END
$$;

-- No agent: the unit is not placed; the probe goes to no host.
SELECT * FROM pg_temp.probe();
-- Registrations: hc_1 (no label: the unit is placed, the probe fits no
-- host), hc_2 (no label yet), then hc_2's label nvlink
SET ROLE regress_hc_host;
SELECT name FROM quota_sched.agent_ready('hc_1', 'hc_queue', 'gpu', 2);
RESET ROLE;
SELECT * FROM pg_temp.probe();
SET ROLE regress_hc_host;
SELECT name FROM quota_sched.agent_ready('hc_2', 'hc_queue', 'gpu', 4);
RESET ROLE;
SELECT * FROM pg_temp.probe();
SET ROLE regress_hc_host;
SELECT name FROM quota_sched.agent_ready('hc_2', 'hc_queue', 'gpu', 4, '{"nvlink": "n1"}');
RESET ROLE;
SELECT * FROM pg_temp.probe();
-- Passes with nothing changed, then heartbeats: no read.  (The first
-- heartbeat of each agent sets its lease, which had none: a change.)
SELECT * FROM pg_temp.probe();
SET ROLE regress_hc_host;
SELECT count(*) FROM quota_sched.heartbeat('hc_1');
SELECT count(*) FROM quota_sched.heartbeat('hc_2');
RESET ROLE;
SELECT * FROM pg_temp.probe();
SET ROLE regress_hc_host;
SELECT count(*) FROM quota_sched.heartbeat('hc_1');
SELECT count(*) FROM quota_sched.heartbeat('hc_2');
SELECT count(*) FROM quota_sched.heartbeat('hc_2');
RESET ROLE;
SELECT * FROM pg_temp.probe();
SELECT * FROM pg_temp.probe();
-- A drain, and its end
SELECT name, state FROM quota_sched.drain_agent('hc_2');
SELECT * FROM pg_temp.probe();
SELECT name, state FROM quota_sched.drain_agent('hc_2', false);
SELECT * FROM pg_temp.probe();
-- A label change (hc_2 loses nvlink, then gets it back)
SET ROLE regress_hc_host;
SELECT name FROM quota_sched.agent_ready('hc_2', 'hc_queue', 'gpu', 4, '{"rack": "r1"}');
RESET ROLE;
SELECT * FROM pg_temp.probe();
SET ROLE regress_hc_host;
SELECT name FROM quota_sched.agent_ready('hc_2', 'hc_queue', 'gpu', 4, '{"nvlink": "n1"}');
RESET ROLE;
SELECT * FROM pg_temp.probe();
-- A change of instances (hc_2 of 2: the probe no longer fits it)
SET ROLE regress_hc_host;
SELECT name FROM quota_sched.agent_ready('hc_2', 'hc_queue', 'gpu', 2, '{"nvlink": "n1"}');
SELECT name FROM quota_sched.agent_ready('hc_2', 'hc_queue', 'gpu', 4, '{"nvlink": "n1"}');
RESET ROLE;
SELECT * FROM pg_temp.probe();
-- A lease that runs out: hc_2's heartbeat with a lease of 2 seconds (a
-- change of lease), then 2.5 seconds of silence; the cache holds hc_2 live
-- until then, and no longer.
SET ROLE regress_hc_host;
SELECT count(*) FROM quota_sched.heartbeat('hc_2', '2 seconds');
RESET ROLE;
SELECT * FROM pg_temp.probe();
SELECT pg_sleep(2.5);
SELECT * FROM pg_temp.probe();
SELECT * FROM pg_temp.probe();
-- A revival: the same heartbeat (same lease) brings hc_2 back
SET ROLE regress_hc_host;
SELECT count(*) FROM quota_sched.heartbeat('hc_2', '2 seconds');
RESET ROLE;
SELECT * FROM pg_temp.probe();
SET ROLE regress_hc_host;
SELECT count(*) FROM quota_sched.heartbeat('hc_2');
RESET ROLE;
-- A forget
SELECT name FROM quota_sched.forget_agent('hc_2');
SELECT * FROM pg_temp.probe();
-- In one transaction, a change not committed is seen by its own pass;
-- rolled back, the next pass reads the agents again (twice: that pass also
-- replaces the queue's rows of agent_change, more than 16, by one (below); the
-- terminate of the probe reads them after it).
BEGIN;
SET ROLE regress_hc_host;
SELECT name FROM quota_sched.agent_ready('hc_2', 'hc_queue', 'gpu', 4, '{"nvlink": "n1"}');
RESET ROLE;
SELECT * FROM pg_temp.probe();
ROLLBACK;
SELECT * FROM pg_temp.probe();
SELECT * FROM pg_temp.probe();
-- The pass of a queue with many changes (20 drains and their ends) keeps
-- one row of them; that is a change too.
DO $$
BEGIN
	FOR i IN 1..20 LOOP
		PERFORM quota_sched.drain_agent('hc_1');
		PERFORM quota_sched.drain_agent('hc_1', false);
	END LOOP;
END
$$;
SELECT count(*) > 16 AS many FROM quota_sched.agent_change WHERE job_queue = 'hc_queue';
SELECT * FROM pg_temp.probe();
SELECT count(*) AS changes_kept FROM quota_sched.agent_change WHERE job_queue = 'hc_queue';
SELECT * FROM pg_temp.probe();
SELECT * FROM pg_temp.probe();
SELECT name FROM quota_sched.forget_agent('hc_1');
SELECT count(*) AS drift FROM quota_sched.held_capacity_drift();

-- Jobs given at their dispatch (issue 42, item 2; scheduling.md 12.3b;
-- src/agents/agent_wait.c): a session that waits with agent_wait(lease =>
-- ...) is given the jobs not placed that a pass dispatches while it
-- waits, within its room: the pass claims and starts each for its agent
-- and role, and the session's next claim returns it, once.  The agent's
-- session is a second connection (dblink), whose CALL runs while this one
-- runs the passes; gw_wait starts it and returns once it waits.

\i test/regress/include/helpers.sql

CREATE EXTENSION dblink;
CREATE ROLE regress_ag_host LOGIN IN ROLE quota_sched_agent;
CREATE ROLE regress_ag_stranger LOGIN IN ROLE quota_sched_agent;
INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('regress_ag_host', NULL);
INSERT INTO quota_sched.service_environment (name, capacity_limits) VALUES ('ag_env', '{"gpu": 8, "cpu": 8}');
INSERT INTO quota_sched.job_queue (name, service_environment, claim_timeout)
VALUES ('ag_queue', 'ag_env', '1 hour');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('ag_queue', 'ag_s', '{"gpu": 8, "cpu": 8}', 'RESERVE');

-- the agent's connection
SELECT dblink_connect('ag', format('host=%s port=%s dbname=%s user=regress_ag_host',
	split_part(current_setting('unix_socket_directories'), ',', 1), current_setting('port'),
	current_database())) AS connected;
CREATE TABLE ag_pid AS SELECT pid FROM dblink('ag', 'SELECT pg_backend_pid()') AS t(pid int);

-- ag(sql): runs a statement on the agent's connection, its rows as text
CREATE FUNCTION pg_temp.ag(sql text) RETURNS SETOF text LANGUAGE sql AS $$
	SELECT r::text FROM dblink('ag', sql) AS t(r text)
$$;
-- ag_wait(lease): the agent's session takes what is pending (a claim
-- that left jobs behind keeps a dispatch pending), then starts a wait
-- (60 s: each ends by a wake-up or a cancel) as ag1, with that lease
-- (null: none), and is waiting when this returns
CREATE FUNCTION pg_temp.ag_wait(lease text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_temp.ag($c$CALL quota_sched.agent_wait('ag1', 'ag_queue', 0)$c$);
	PERFORM dblink_send_query('ag', format(
		$c$CALL quota_sched.agent_wait('ag1', 'ag_queue', 60000, lease => %L::interval)$c$, lease));
	FOR i IN 1..2000 LOOP
		IF EXISTS (SELECT 1 FROM pg_stat_activity a JOIN ag_pid USING (pid)
				    WHERE a.wait_event = 'Extension') THEN
			RETURN 'waiting';
		END IF;
		PERFORM pg_sleep(0.005);
	END LOOP;
	RETURN 'not waiting';
END
$$;
-- ag_woken(): what the agent's wait returned (once the pass committed,
-- or the wait ended)
CREATE FUNCTION pg_temp.ag_woken() RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	w text;
BEGIN
	SELECT t.w::text INTO w FROM dblink_get_result('ag') AS t(w text[]);
	PERFORM * FROM dblink_get_result('ag') AS t(w text[]);	-- the end of its results
	RETURN w;
END
$$;
-- submit(name, n): a job, then the queue's pass; the job's state, agent,
-- role, and lease from its start
CREATE FUNCTION pg_temp.submit(job_name text, n int) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
	VALUES (job_name, 'ag_queue', 'ag_s', 'gpu', n);
	PERFORM quota_sched.run_pass('ag_queue');
	RETURN (SELECT format('%s %s %s %s', state, coalesce(agent, '-'), coalesce(agent_role::text, '-'),
						  coalesce((lease_until - started_at)::text, '-'))
			  FROM quota_sched.job WHERE name = job_name);
END
$$;
-- claim(room): the agent's claim, with room for that many instances
-- (what it has free: a job given counts in it), its jobs' names
CREATE FUNCTION pg_temp.claim(room int) RETURNS text LANGUAGE sql AS $$
	SELECT coalesce(string_agg(r, ',' ORDER BY r), '(none)') FROM pg_temp.ag(format(
		$c$SELECT name || ' ' || state || ' left=' || quota_sched.claim_left()
			 FROM quota_sched.claim('ag1', 'ag_queue', max_jobs => %s, max_instances => %s,
									start => true)$c$, room, room)) r
$$;
-- heartbeat(): the jobs the agent's heartbeat returns (names)
CREATE FUNCTION pg_temp.heartbeat() RETURNS text LANGUAGE sql AS $$
	SELECT coalesce(string_agg(j.name || coalesce(' ' || h.stop_reason, ''), ',' ORDER BY j.name),
					'(none)')
	  FROM dblink('ag', $c$SELECT job_id, stop_reason FROM quota_sched.heartbeat('ag1', '2 hours')$c$)
		   AS h(job_id bigint, stop_reason text)
	  JOIN quota_sched.job j ON j.id = h.job_id
$$;
-- report(state, names): the agent's reports
CREATE FUNCTION pg_temp.report(state text, VARIADIC names text[]) RETURNS text LANGUAGE sql AS $$
	SELECT string_agg(r, ',') FROM pg_temp.ag(format(
		$c$SELECT r.state FROM quota_sched.job j, quota_sched.report(j.id, 'ag1', %L) r
			WHERE j.name = ANY (%L) ORDER BY j.name$c$, state, names)) r
$$;

-- the session's first wait takes everything pending; its claim (nothing
-- to take) says it has room for 2
SELECT pg_temp.ag($$CALL quota_sched.agent_wait('ag1', 'ag_queue', 0)$$);
SELECT pg_temp.claim(2);

-- a job of 1 while it waits with a lease of 10 minutes: given, RUNNING
-- for ag1 and its login, with that lease; the wait returns dispatch
SELECT pg_temp.ag_wait('10 minutes');
SELECT pg_temp.submit('ag_a', 1);
SELECT pg_temp.ag_woken();
-- its history is that of a claim with start by ag1, in the pass's
-- transaction
SELECT e.from_state, e.to_state, e.actor, e.pass_id IS NOT NULL AS by_pass,
	   e.at = j.scheduled_at AS at_dispatch
  FROM quota_sched.job_event e JOIN quota_sched.job j ON j.id = e.job_id
 WHERE j.name = 'ag_a' ORDER BY e.id;
-- the heartbeat returns it and extends its lease, as any job the agent
-- holds (so an agent claims when its wait says dispatch before it
-- heartbeats, or it would release a job it was not told of)
SELECT pg_temp.heartbeat();
SELECT lease_until - started_at > '1 hour' AS extended FROM quota_sched.job WHERE name = 'ag_a';
-- the claim returns it, once (room for 2: it took 1)
SELECT pg_temp.claim(2);
SELECT pg_temp.claim(1);

-- room for 1: a job of 2 is not given (the wait is woken to claim it,
-- and the claim has no room for it); cancelled
SELECT pg_temp.ag_wait('10 minutes');
SELECT pg_temp.submit('ag_b', 2);
SELECT pg_temp.ag_woken();
SELECT pg_temp.claim(1);
SELECT (quota_sched.terminate(id)).state FROM quota_sched.job WHERE name = 'ag_b';
-- one of 1 is given; one more, dispatched after it, is not (no room
-- left); the claim (up to 2 jobs, of 1 instance) returns the first, takes
-- nothing more, and says it left one behind; the agent has no room left
-- after it: a job of 1 is not given
SELECT pg_temp.ag_wait('10 minutes');
SELECT pg_temp.submit('ag_c', 1);
SELECT pg_temp.ag_woken();
SELECT pg_temp.submit('ag_d', 1);
SELECT r FROM pg_temp.ag($$SELECT name || ' left=' || quota_sched.claim_left()
	FROM quota_sched.claim('ag1', 'ag_queue', max_jobs => 2, max_instances => 1, start => true)$$) r;
SELECT pg_temp.ag_wait('10 minutes');
SELECT pg_temp.submit('ag_x', 1);
SELECT pg_temp.ag_woken();
SELECT (quota_sched.terminate(id)).state FROM quota_sched.job WHERE name = 'ag_x';
-- with room again (two reports), the claim takes the other
SELECT pg_temp.report('SUCCEEDED', 'ag_a', 'ag_c');
SELECT pg_temp.claim(2);

-- a wait without a lease is given nothing (woken to claim)
SELECT pg_temp.ag_wait(NULL);
SELECT pg_temp.submit('ag_e', 1);
SELECT pg_temp.ag_woken();
SELECT pg_temp.claim(1);
SELECT pg_temp.report('SUCCEEDED', 'ag_d', 'ag_e');

-- a pass rolled back gives nothing and wakes nothing, and the room it
-- took comes back: two jobs of 1 in one pass are both given
SELECT pg_temp.ag_wait('10 minutes');
BEGIN;
SELECT pg_temp.submit('ag_f', 1);
ROLLBACK;
SELECT state FROM pg_stat_activity JOIN ag_pid USING (pid);
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('ag_g', 'ag_queue', 'ag_s', 'gpu', 1), ('ag_h', 'ag_queue', 'ag_s', 'gpu', 1);
SELECT count(*) AS dispatched FROM quota_sched.run_pass('ag_queue') WHERE action = 'DISPATCH';
SELECT pg_temp.ag_woken();
SELECT name, state, agent FROM quota_sched.job WHERE name IN ('ag_f', 'ag_g', 'ag_h') ORDER BY name;
-- two claims of one transaction, each with room for 1: the first returns
-- both (every job given, whatever its bounds), the second neither
SELECT r FROM pg_temp.ag($$SELECT
	(SELECT string_agg(name, ',' ORDER BY name) FROM quota_sched.claim('ag1', 'ag_queue',
		max_instances => 1, start => true)) || ' / ' ||
	coalesce((SELECT string_agg(name, ',') FROM quota_sched.claim('ag1', 'ag_queue',
		max_instances => 1, start => true)), '(none)')$$) r;
SELECT pg_temp.claim(2);
SELECT pg_temp.report('SUCCEEDED', 'ag_g', 'ag_h');
-- so does a pass rolled back to a savepoint; and a claim rolled back to
-- a savepoint leaves the job to the next claim
SELECT pg_temp.ag_wait('10 minutes');
BEGIN;
SAVEPOINT s;
SELECT pg_temp.submit('ag_f2', 1);
ROLLBACK TO s;
COMMIT;
SELECT pg_temp.submit('ag_g2', 2);
SELECT pg_temp.ag_woken();
SELECT r FROM pg_temp.ag($$BEGIN; SAVEPOINT s;
	SELECT count(*) FROM quota_sched.claim('ag1', 'ag_queue', max_instances => 2, start => true);
	ROLLBACK TO s; COMMIT$$) r;
SELECT pg_temp.claim(2);
SELECT pg_temp.report('SUCCEEDED', 'ag_g2');
-- a wait that ends (here, cancelled) while a pass that gave it a job has
-- not yet committed says dispatch once the pass commits: the agent never
-- misses a job given to it (it might stop taking jobs next)
SELECT pg_temp.ag_wait('10 minutes');
BEGIN;
SELECT pg_temp.submit('ag_g3', 1);
SELECT pg_cancel_backend(pid) FROM ag_pid;
SELECT pg_sleep(0.05);
COMMIT;
SELECT pg_temp.ag_woken();
SELECT pg_temp.claim(2);
SELECT pg_temp.report('SUCCEEDED', 'ag_g3');

-- a job given, then terminated before the claim: a stop is requested (it
-- is claimed); the claim returns it, and the heartbeat the stop
SELECT pg_temp.ag_wait('10 minutes');
SELECT pg_temp.submit('ag_i', 1);
SELECT pg_temp.ag_woken();
SELECT (quota_sched.terminate(id)).state FROM quota_sched.job WHERE name = 'ag_i';
SELECT pg_temp.claim(2);
SELECT pg_temp.heartbeat();
SELECT pg_temp.report('STOPPED', 'ag_i');

-- a registered agent that drains is given nothing (ag1 registers in
-- another unit, so that the jobs of gpu are not placed)
SELECT r FROM pg_temp.ag($$SELECT name FROM quota_sched.agent_ready('ag1', 'ag_queue', 'cpu', 2)$$) r;
-- drained while it waits: its wait ends (dispatch), and the next is given
-- nothing
SELECT pg_temp.ag_wait('10 minutes');
SELECT state FROM quota_sched.drain_agent('ag1');
SELECT pg_temp.ag_woken();
SELECT pg_temp.ag_wait('10 minutes');
SELECT pg_temp.submit('ag_j', 1);
SELECT pg_temp.ag_woken();
SELECT (quota_sched.terminate(id)).state FROM quota_sched.job WHERE name = 'ag_j';
SELECT count(*) FROM quota_sched.forget_agent('ag1');

-- a session that ends with a job given and not claimed: the job stays
-- the agent's; the heartbeat of its next session returns it (the agent
-- releases it: it does not run it), its claim does not
SELECT pg_temp.claim(2);
SELECT pg_temp.ag_wait('10 minutes');
SELECT pg_temp.submit('ag_k', 1);
SELECT pg_temp.ag_woken();
SELECT dblink_disconnect('ag');
SELECT dblink_connect('ag', format('host=%s port=%s dbname=%s user=regress_ag_host',
	split_part(current_setting('unix_socket_directories'), ',', 1), current_setting('port'),
	current_database())) AS connected;
UPDATE ag_pid SET pid = t.pid FROM dblink('ag', 'SELECT pg_backend_pid()') AS t(pid int);
SELECT pg_temp.heartbeat();
SELECT pg_temp.claim(2);
SELECT pg_temp.ag($$SELECT state FROM quota_sched.release(
	(SELECT id FROM quota_sched.job WHERE name = 'ag_k'), 'ag1')$$);
SELECT (quota_sched.terminate(id)).state FROM quota_sched.job WHERE name = 'ag_k';

-- placed on hosts: ag1 and ag2 register for gpu (2 instances each); a job
-- of 1, placed on ag1 (best fit, ties to the least name) while it waits,
-- is given to it: its part and the job RUNNING for it, in the pass
SELECT r FROM pg_temp.ag($$SELECT string_agg(a.name, ',') FROM (
	SELECT name FROM quota_sched.agent_ready('ag1', 'ag_queue', 'gpu', 2) UNION ALL
	SELECT name FROM quota_sched.agent_ready('ag2', 'ag_queue', 'gpu', 2, '{"rack": "r2"}')) a$$) r;
SELECT pg_temp.ag($$CALL quota_sched.agent_wait('ag1', 'ag_queue', 0)$$);
SELECT pg_temp.claim(2);
SELECT pg_temp.ag_wait('10 minutes');
SELECT pg_temp.submit('ag_l', 1);
SELECT pg_temp.ag_woken();
SELECT p.rank, p.agent, p.state, p.agent_role, p.claimed_at = j.scheduled_at AS at_dispatch
  FROM quota_sched.job_part p JOIN quota_sched.job j ON j.id = p.job_id WHERE j.name = 'ag_l';
SELECT e.from_state, e.to_state, e.actor FROM quota_sched.job_event e
  JOIN quota_sched.job j ON j.id = e.job_id WHERE j.name = 'ag_l' ORDER BY e.id;
SELECT pg_temp.claim(2);
-- a job placed on ag2 (of 1, on a host with a rack: ag1 has room too) is
-- not given to ag1, which is not woken (its wait is cancelled here); nor
-- a job of two parts, on ag1 and ag2: ag1 is woken to claim its part
SELECT pg_temp.ag_wait('10 minutes');
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count,
							 same_label)
VALUES ('ag_m', 'ag_queue', 'ag_s', 'gpu', 1, 'rack');
SELECT count(*) AS dispatched FROM quota_sched.run_pass('ag_queue') WHERE action = 'DISPATCH';
SELECT state, part_agents FROM quota_sched.job WHERE name = 'ag_m';
SELECT pg_cancel_backend(pid) FROM ag_pid;
SELECT pg_temp.ag_woken();
SELECT (quota_sched.terminate(id)).state FROM quota_sched.job WHERE name = 'ag_m';
SELECT pg_temp.ag_wait('10 minutes');
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count,
							 instances_per_host)
VALUES ('ag_n', 'ag_queue', 'ag_s', 'gpu', 2, 1);
SELECT count(*) AS dispatched FROM quota_sched.run_pass('ag_queue') WHERE action = 'DISPATCH';
SELECT pg_temp.ag_woken();
SELECT string_agg(p.agent || ' ' || p.state, ', ' ORDER BY p.rank)
  FROM quota_sched.job_part p JOIN quota_sched.job j ON j.id = p.job_id WHERE j.name = 'ag_n';
SELECT pg_temp.claim(1);
SELECT string_agg(p.agent || ' ' || p.state, ', ' ORDER BY p.rank)
  FROM quota_sched.job_part p JOIN quota_sched.job j ON j.id = p.job_id WHERE j.name = 'ag_n';
SELECT (quota_sched.terminate(id)).state FROM quota_sched.job WHERE name = 'ag_n';

-- the lease is checked, and the login must serve the queue (42501)
SELECT pg_temp.refused($$CALL quota_sched.agent_wait('ag1', 'ag_queue', 0, lease => '0 s')$$);
SELECT pg_temp.refused($$CALL quota_sched.agent_wait('ag1', 'ag_queue', 0, lease => '-1 s')$$);
SELECT pg_temp.refused($$CALL quota_sched.agent_wait('ag1', 'ag_queue', 0, lease => '400 days')$$);
SET ROLE regress_ag_stranger;
SELECT pg_temp.refused($$CALL quota_sched.agent_wait('ag1', 'ag_queue', 0, lease => '1 minute')$$);
CALL quota_sched.agent_wait('ag1', 'ag_queue', 0);
RESET ROLE;

SELECT count(*) FROM quota_sched.forget_agent('ag1') a, quota_sched.forget_agent('ag2') b;
SELECT dblink_disconnect('ag');

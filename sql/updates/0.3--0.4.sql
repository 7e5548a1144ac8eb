/*
 * sql/updates/0.3--0.4.sql
 *		The changes of tables, data and catalog from 0.3 to 0.4.
 *
 * The build makes sql/built/quota_sched--0.3--0.4.sql of this file
 * followed by every function source (sql/: validation, triggers, the
 * APIs, reporting, whatif, metrics, chart), which recreate each function
 * and view as 0.4 has it (CREATE OR REPLACE).  So this file holds only
 * what those cannot do: ALTER TABLE and the data it needs, new tables (and
 * the same change in sql/tables.sql), DROP FUNCTION before a function's
 * signature or result type changes (and DROP VIEW before a view's column
 * changes type), ALTER POLICY.  The rules of an update are in
 * sql/updates/README.md.  test/t/006_upgrade.pl checks that an updated
 * database has the catalog of a fresh install, and that populated
 * databases of 0.1, 0.2 and 0.3 keep what they had.
 */

/*
 * agent_access (issue 37, item 2; tables.sql has its comment): in 0.3
 * every agent login served every queue, and so it does after the update:
 * each role with the privileges of quota_sched_agent (but admins, who need
 * none) gets a row for every queue, so that no fleet stops at the update.
 * Admins then narrow them (doc/agents.md).  A registration's lease is at
 * most quota_sched.max_agent_lease (an hour by default) from 0.4 on:
 * longer ones are cut to an hour here.
 */
CREATE TABLE quota_sched.agent_access (
	login			name NOT NULL,
	job_queue		text
		REFERENCES quota_sched.job_queue (name) ON DELETE CASCADE,
	granted_at		timestamptz NOT NULL DEFAULT now(),
	CONSTRAINT agent_access_unique UNIQUE NULLS NOT DISTINCT (login, job_queue)
);
SELECT pg_catalog.pg_extension_config_dump('quota_sched.agent_access', '');
REVOKE ALL ON quota_sched.agent_access FROM PUBLIC;
GRANT SELECT, INSERT, DELETE ON quota_sched.agent_access TO quota_sched_admin;

INSERT INTO quota_sched.agent_access (login, job_queue)
SELECT r.rolname, NULL
  FROM pg_catalog.pg_roles r
 WHERE pg_catalog.pg_has_role(r.oid, 'quota_sched_agent', 'MEMBER')
   AND r.rolname <> 'quota_sched_agent' AND NOT r.rolsuper
   AND NOT pg_catalog.pg_has_role(r.oid, 'quota_sched_admin', 'USAGE');

UPDATE quota_sched.agent SET lease = interval '1 hour' WHERE lease > interval '1 hour';

/*
 * The output kept of attempts (job_attempt.output) is made safe to show
 * in a terminal (issue 37, item 4; QsSafeOutput, src/job_attempt.c): 0.3
 * kept a job's control sequences as it sent them.  The function source
 * (agent_api.sql) makes the function again after this script.
 */
CREATE OR REPLACE FUNCTION quota_sched.safe_output(output text)
RETURNS text
AS 'MODULE_PATHNAME', 'qs_safe_output'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
UPDATE quota_sched.job_attempt SET output = quota_sched.safe_output(output)
 WHERE output IS DISTINCT FROM quota_sched.safe_output(output);

/*
 * Budgets with a fraction of an instance-hour (issue 37, item 5;
 * scheduling.md 3.11): share_budget.budget_hours is numeric (was bigint),
 * a new column type, so the view goes, with config_review and metrics()
 * (BEGIN ATOMIC), which read it; the sources recreate all three, with
 * their privileges (to the extension's roles and pg_monitor: a privilege
 * granted on them to another role is to be granted again).  The budget's
 * CHECK is check_budget() (validation.sql), made here before the
 * constraint that calls it; the budgets of 0.3 are whole numbers, which
 * it takes.
 */
CREATE OR REPLACE FUNCTION quota_sched.check_budget(value jsonb, what text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'qs_check_budget'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
ALTER TABLE quota_sched.quota_share DROP CONSTRAINT quota_share_budget_check,
	ADD CONSTRAINT quota_share_budget_check
		CHECK (quota_sched.check_budget(budget, 'quota share ' || name));
DROP FUNCTION quota_sched.metrics();
/* terminate gains array (issue 41); queue_snapshot gains hosts and host_instances (issue 39) */
DROP FUNCTION quota_sched.terminate(bigint, text);
DROP FUNCTION quota_sched.queue_snapshot(text, integer);
DROP VIEW quota_sched.config_review;
DROP VIEW quota_sched.share_budget;

/*
 * One home per word (issue 38, item 1; sql/words.sql has its comment):
 * the words of each kind that columns hold are a DOMAIN, as the policy
 * core's lists have them (src/core/words.h), and every column of a kind
 * is checked against its domain by a CHECK that casts it (TABLE_word_COLUMN).
 * The columns stay text.  job.state keeps SUBMITTED and PENDING, names
 * only, which no version wrote; stop_reason and the columns of
 * job_event had no CHECK; agent.state's spelled its words.  The new
 * CHECKs read the tables once (job_event's history too), and refuse a row
 * that holds none of its kind's words.
 */
CREATE DOMAIN quota_sched.job_state AS text
	CONSTRAINT job_state_check
	CHECK (VALUE IN ('RUNNABLE', 'SCHEDULED', 'STARTING', 'RUNNING', 'SUCCEEDED', 'FAILED',
					 'SUBMITTED', 'PENDING'));
CREATE DOMAIN quota_sched.stop_reason AS text
	CONSTRAINT stop_reason_check
	CHECK (VALUE IN ('CROSS_SHARE_PREEMPTION', 'IN_SHARE_PREEMPTION', 'CAPACITY_REDUCED',
					 'TIMEOUT', 'TERMINATED', 'PEER_FAILED', 'PEER_LOST', 'PEER_RELEASED'));
CREATE DOMAIN quota_sched.event_kind AS text
	CONSTRAINT event_kind_check
	CHECK (VALUE IN ('STATE', 'STOP', 'TERMINATE', 'PRIORITY', 'PROMISE', 'PROMISE_LAPSED'));
CREATE DOMAIN quota_sched.strategy AS text
	CONSTRAINT strategy_check CHECK (VALUE IN ('RESERVE', 'LEND', 'LEND_AND_BORROW'));
CREATE DOMAIN quota_sched.queueing AS text
	CONSTRAINT queueing_check CHECK (VALUE IN ('BEST_EFFORT', 'STRICT'));
CREATE DOMAIN quota_sched.borrow_order AS text
	CONSTRAINT borrow_order_check CHECK (VALUE IN ('FIFO', 'FAIR'));
CREATE DOMAIN quota_sched.budget_period AS text
	CONSTRAINT budget_period_check CHECK (VALUE IN ('DAY', 'WEEK', 'MONTH'));
CREATE DOMAIN quota_sched.config_state AS text
	CONSTRAINT config_state_check CHECK (VALUE IN ('ENABLED', 'DISABLED'));
CREATE DOMAIN quota_sched.agent_state AS text
	CONSTRAINT agent_state_check CHECK (VALUE IN ('ACTIVE', 'DRAINING'));
CREATE DOMAIN quota_sched.part_state AS text
	CONSTRAINT part_state_check CHECK (VALUE IN ('PLACED', 'CLAIMED', 'RUNNING', 'ENDED'));
CREATE DOMAIN quota_sched.part_end AS text
	CONSTRAINT part_end_check
	CHECK (VALUE IN ('SUCCEEDED', 'FAILED', 'STOPPED', 'RELEASED', 'LOST', 'DROPPED'));

ALTER TABLE quota_sched.service_environment
	ADD CONSTRAINT service_environment_word_state
		CHECK (state::quota_sched.config_state IS NOT NULL);
ALTER TABLE quota_sched.job_queue
	ADD CONSTRAINT job_queue_word_state CHECK (state::quota_sched.config_state IS NOT NULL),
	ADD CONSTRAINT job_queue_word_borrow_order
		CHECK (borrow_order::quota_sched.borrow_order IS NOT NULL);
ALTER TABLE quota_sched.quota_share
	ADD CONSTRAINT quota_share_word_strategy CHECK (strategy::quota_sched.strategy IS NOT NULL),
	ADD CONSTRAINT quota_share_word_state CHECK (state::quota_sched.config_state IS NOT NULL),
	ADD CONSTRAINT quota_share_word_queueing CHECK (queueing::quota_sched.queueing IS NOT NULL),
	ADD CONSTRAINT quota_share_word_budget_period
		CHECK (budget_period::quota_sched.budget_period IS NOT NULL);
ALTER TABLE quota_sched.job
	DROP CONSTRAINT job_state_check,
	ADD CONSTRAINT job_word_state CHECK (state::quota_sched.job_state IS NOT NULL),
	ADD CONSTRAINT job_word_stop_reason
		CHECK (stop_reason IS NULL OR stop_reason::quota_sched.stop_reason IS NOT NULL);
ALTER TABLE quota_sched.job_event
	ADD CONSTRAINT job_event_word_from_state
		CHECK (from_state IS NULL OR from_state::quota_sched.job_state IS NOT NULL),
	ADD CONSTRAINT job_event_word_to_state CHECK (to_state::quota_sched.job_state IS NOT NULL),
	ADD CONSTRAINT job_event_word_kind CHECK (kind::quota_sched.event_kind IS NOT NULL);
ALTER TABLE quota_sched.agent
	DROP CONSTRAINT agent_state_check,
	ADD CONSTRAINT agent_word_state CHECK (state::quota_sched.agent_state IS NOT NULL);

/*
 * The placement constraints of a job (issue 39; scheduling.md 3.13;
 * tables.sql has its comment): instances_per_host and same_label, set by
 * the submitter (so UPDATE-able as a privilege, for the update guard to
 * answer, as the other submitter's columns), null for the jobs of 0.3.
 */
ALTER TABLE quota_sched.job
	ADD COLUMN instances_per_host integer,
	ADD COLUMN same_label text,
	ADD CONSTRAINT job_instances_per_host_check
		CHECK (instances_per_host BETWEEN 1 AND instance_count
			   AND instance_count % instances_per_host = 0),
	ADD CONSTRAINT job_same_label_check CHECK (same_label ~ '^[a-z0-9_.-]{1,63}$');
GRANT UPDATE (instances_per_host, same_label) ON quota_sched.job
	TO quota_sched_admin, quota_sched_user;

/*
 * Placement on hosts (scheduling.md 3.13, 3.14): a job's placement in
 * rank order, the parts of its attempts, who may read them.  Jobs that
 * run now were claimed in 0.3, in units that were not placed: they have
 * no parts, and job_parts shows their one part from the job.
 */
ALTER TABLE quota_sched.job
	ADD COLUMN part_agents text[],
	ADD COLUMN part_instances integer[];

/*
 * Arrays (issue 41; scheduling.md 3.16; tables.sql has its comment):
 * array_size set by the submitter at the INSERT only (no UPDATE), array_id
 * and array_index by the system; null for the jobs of 0.3.
 */
ALTER TABLE quota_sched.job
	ADD COLUMN array_size integer,
	ADD COLUMN array_id bigint,
	ADD COLUMN array_index integer,
	ADD CONSTRAINT job_array_size_check CHECK (array_size BETWEEN 2 AND 10000);
CREATE INDEX job_array ON quota_sched.job (array_id) WHERE array_id IS NOT NULL;

/*
 * Dependencies (issue 41; scheduling.md 3.17; tables.sql has its comment):
 * depends_on set by the submitter at the INSERT only (no UPDATE), the
 * others by the system; null in all four is none: the jobs of 0.3
 * depend on nothing and have no dependents.  The pass's indexes of RUNNABLE jobs leave out those waiting
 * for dependencies: made anew with that predicate.
 */
ALTER TABLE quota_sched.job
	ADD COLUMN depends_on bigint[],
	ADD COLUMN dependencies_waiting integer,
	ADD COLUMN dependency_failed bigint,
	ADD COLUMN has_dependents boolean,
	ADD CONSTRAINT job_depends_on_check CHECK (cardinality(depends_on) <= 100),
	ADD CONSTRAINT job_dependencies_waiting_check CHECK (dependencies_waiting > 0),
	ADD CONSTRAINT job_has_dependents_check CHECK (has_dependents);
CREATE INDEX job_dependents ON quota_sched.job USING gin (depends_on)
	WHERE state = 'RUNNABLE' AND depends_on IS NOT NULL;
CREATE INDEX job_dependency_failed ON quota_sched.job (job_queue, id)
	WHERE state = 'RUNNABLE' AND dependency_failed IS NOT NULL;
DROP INDEX quota_sched.job_runnable_share_order;
CREATE INDEX job_runnable_share_order ON quota_sched.job
	(job_queue, quota_share, capacity_unit, priority DESC, queued_at, id)
	WHERE state = 'RUNNABLE' AND dependencies_waiting IS NULL;
DROP INDEX quota_sched.job_runnable_by_size;
CREATE INDEX job_runnable_by_size ON quota_sched.job
	(job_queue, quota_share, capacity_unit, instance_count)
	WHERE state = 'RUNNABLE' AND dependencies_waiting IS NULL;

CREATE INDEX job_partly_claimed ON quota_sched.job (job_queue, scheduled_at, id)
	WHERE state = 'SCHEDULED' AND agent IS NOT NULL;
CREATE INDEX job_runnable_constrained ON quota_sched.job
	(job_queue, quota_share, capacity_unit, priority DESC, queued_at, id)
	WHERE state = 'RUNNABLE' AND dependencies_waiting IS NULL
	  AND (instances_per_host IS NOT NULL OR same_label IS NOT NULL);
CREATE INDEX job_runnable_constrained_by_size ON quota_sched.job
	(job_queue, quota_share, capacity_unit, (coalesce(instances_per_host, 0)),
	 (coalesce(same_label, '')), instance_count)
	WHERE state = 'RUNNABLE' AND dependencies_waiting IS NULL
	  AND (instances_per_host IS NOT NULL OR same_label IS NOT NULL);
CREATE INDEX job_placement_reason ON quota_sched.job (job_queue, capacity_unit)
	WHERE state = 'RUNNABLE' AND status_reason IN ('WAITING_FOR_HOSTS', 'NO_AGENT_FITS');
CREATE TABLE quota_sched.job_part (
	job_id			bigint NOT NULL,
	placed_at		timestamptz NOT NULL,
	attempt			integer NOT NULL,
	rank			integer NOT NULL,
	agent			text NOT NULL,
	address			text NOT NULL,
	instances		integer NOT NULL,
	state			text NOT NULL,
	lease_until		timestamptz,
	claimed_at		timestamptz,
	agent_role		name,
	ended_at		timestamptz,
	ended_as		text,
	stop_reason		text,
	exit_code		integer,
	port			integer,
	PRIMARY KEY (job_id, placed_at, rank),
	CONSTRAINT job_part_rank_check CHECK (rank >= 0),
	CONSTRAINT job_part_instances_check CHECK (instances >= 1),
	CONSTRAINT job_part_port_check CHECK (port BETWEEN 1 AND 65535),
	CONSTRAINT job_part_word_state CHECK (state::quota_sched.part_state IS NOT NULL),
	CONSTRAINT job_part_word_ended_as
		CHECK (ended_as IS NULL OR ended_as::quota_sched.part_end IS NOT NULL)
);
CREATE INDEX job_part_agent ON quota_sched.job_part (agent, job_id)
	WHERE state IN ('PLACED', 'CLAIMED', 'RUNNING');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.job_part', '');
REVOKE ALL ON quota_sched.job_part FROM PUBLIC;
GRANT SELECT ON quota_sched.job_part TO quota_sched_admin, quota_sched_user, quota_sched_agent;
ALTER TABLE quota_sched.job_part ENABLE ROW LEVEL SECURITY;
CREATE POLICY job_part_admin ON quota_sched.job_part FOR SELECT TO quota_sched_admin
	USING (true);
CREATE POLICY job_part_user ON quota_sched.job_part FOR SELECT TO quota_sched_user
	USING (EXISTS (SELECT 1 FROM quota_sched.job j WHERE j.id = job_part.job_id));
CREATE POLICY job_part_agent ON quota_sched.job_part FOR SELECT TO quota_sched_agent
	USING (agent_role = CURRENT_USER);
ALTER TABLE quota_sched.job_attempt
	ADD COLUMN rank integer NOT NULL DEFAULT 0,
	DROP CONSTRAINT job_attempt_pkey,
	ADD PRIMARY KEY (job_id, attempt, rank);

/*
 * The fleet knows its hosts (issue 39; scheduling.md 3.13; tables.sql has
 * the columns' comment): an agent's labels, its address,
 * and when it last became ACTIVE or DRAINING.  Their CHECKs call
 * check_agent_labels() and check_agent_address() (validation.sql), made
 * here before the constraints.  An agent registered in 0.3 gets no
 * labels, its name as address, and the update's time as state_changed_at
 * (when it became so is not known: an agent drained in 0.3 counts as
 * draining since the update).  agent_ready() takes labels and address: a
 * new signature, so the function of 0.3 goes first (agent_api.sql makes
 * the new one, which an agent of 0.3 calls with its four arguments); the
 * view agents gains its columns at its end (CREATE OR REPLACE).
 */
CREATE OR REPLACE FUNCTION quota_sched.check_agent_labels(labels jsonb, agent text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'qs_check_agent_labels'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION quota_sched.check_agent_address(address text, agent text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'qs_check_agent_address'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
ALTER TABLE quota_sched.agent
	ADD COLUMN labels jsonb NOT NULL DEFAULT '{}',
	ADD COLUMN address text,
	ADD COLUMN state_changed_at timestamptz NOT NULL DEFAULT now(),
	ADD CONSTRAINT agent_labels_check CHECK (quota_sched.check_agent_labels(labels, name)),
	ADD CONSTRAINT agent_address_check
		CHECK (address IS NULL OR quota_sched.check_agent_address(address, name));
DROP FUNCTION quota_sched.agent_ready(text, text, text, integer);

/*
 * The devices (GPUs) a part was given (issue 40; tables.sql has the
 * column's comment): job_attempt.devices, told by attempt_started's new
 * argument devices, a new signature, so the function of 0.3 goes first
 * (agent_api.sql makes the new one, with its grants, which agents of 0.3
 * call with their six arguments); the view job_attempts gains the column
 * at its end (CREATE OR REPLACE).
 */
ALTER TABLE quota_sched.job_attempt
	ADD COLUMN devices text[],
	ADD CONSTRAINT job_attempt_devices_check CHECK (cardinality(devices) BETWEEN 1 AND 256);
DROP FUNCTION quota_sched.attempt_started(bigint, text, integer, text, text, text);

/*
 * A lost lease fenced (issue 40; scheduling.md 3.10; tables.sql has the
 * column): a queue's fence_grace, how long after a lease ran out the pass
 * takes the job back, so that the agent's supervisor has killed the old
 * copy before a new one starts.  Every queue of 0.3 gets the default, 10
 * seconds (0.3 acted at once: set it to 0 for that).  Its CHECK calls
 * check_fence_grace() (validation.sql), made here before the column.
 */
CREATE OR REPLACE FUNCTION quota_sched.check_fence_grace(value interval, what text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'qs_check_fence_grace'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
ALTER TABLE quota_sched.job_queue
	ADD COLUMN fence_grace interval NOT NULL DEFAULT '10 seconds'
		CHECK (quota_sched.check_fence_grace(fence_grace, 'job queue ' || name));

/*
 * The pass stays cheap with hosts (issue 39, item 6; tables.sql has the
 * comments): the counters of what the hosts hold (host_held, and the
 * changes not yet folded into it, host_held_change), kept by the
 * job_usage triggers, which now also see part_agents and part_instances;
 * the held jobs claimed without parts (all of 0.3's: they hold on their
 * agent's host), which the pass reads beside them; and a generation of
 * each queue's agents (agent_change), one row for each queue that has
 * agents now.  The jobs of 0.3 have no parts: host_held starts empty.
 * queue_generation() is made here for its triggers, and again by the
 * sources (triggers.sql) with its body.
 */
CREATE TABLE quota_sched.host_held (
	job_queue		text NOT NULL,
	capacity_unit	text NOT NULL,
	agent			text NOT NULL,
	instances		bigint NOT NULL,
	stopping_instances bigint NOT NULL,
	PRIMARY KEY (job_queue, capacity_unit, agent)
) WITH (fillfactor = 50);
CREATE SEQUENCE quota_sched.host_held_change_seq;
CREATE TABLE quota_sched.host_held_change (
	job_queue		text NOT NULL,
	generation		bigint NOT NULL,
	capacity_unit	text,
	agent			text,
	instances		bigint NOT NULL DEFAULT 0,
	stopping_instances bigint NOT NULL DEFAULT 0
);
CREATE INDEX host_held_change_queue ON quota_sched.host_held_change (job_queue, generation);
SELECT pg_catalog.pg_extension_config_dump('quota_sched.host_held', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.host_held_change', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.host_held_change_seq', '');
REVOKE ALL ON quota_sched.host_held, quota_sched.host_held_change FROM PUBLIC;
REVOKE ALL ON SEQUENCE quota_sched.host_held_change_seq FROM PUBLIC;
CREATE INDEX job_held_unplaced ON quota_sched.job (job_queue, capacity_unit)
	WHERE state IN ('SCHEDULED', 'STARTING', 'RUNNING') AND part_agents IS NULL
	  AND agent IS NOT NULL;
DROP TRIGGER job_usage_update ON quota_sched.job;
CREATE TRIGGER job_usage_update
	AFTER UPDATE OF state, stop_reason, part_agents, part_instances ON quota_sched.job
	FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state
					   OR OLD.stop_reason IS DISTINCT FROM NEW.stop_reason
					   OR OLD.part_agents IS DISTINCT FROM NEW.part_agents
					   OR OLD.part_instances IS DISTINCT FROM NEW.part_instances)
	EXECUTE FUNCTION quota_sched.job_usage();

CREATE SEQUENCE quota_sched.agent_change_seq;
CREATE TABLE quota_sched.agent_change (
	job_queue		text NOT NULL,
	generation		bigint NOT NULL
);
CREATE INDEX agent_change_queue ON quota_sched.agent_change (job_queue, generation);
SELECT pg_catalog.pg_extension_config_dump('quota_sched.agent_change', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.agent_change_seq', '');
REVOKE ALL ON quota_sched.agent_change FROM PUBLIC;
REVOKE ALL ON SEQUENCE quota_sched.agent_change_seq FROM PUBLIC;
INSERT INTO quota_sched.agent_change
SELECT q, nextval('quota_sched.agent_change_seq')
  FROM (SELECT DISTINCT job_queue FROM quota_sched.agent) AS d(q);
CREATE FUNCTION quota_sched.queue_generation() RETURNS trigger
LANGUAGE plpgsql AS 'BEGIN RETURN NULL; END';
CREATE TRIGGER agent_hosts_insert_delete AFTER INSERT OR DELETE ON quota_sched.agent
	FOR EACH ROW EXECUTE FUNCTION quota_sched.queue_generation('agent_change');
CREATE TRIGGER agent_hosts_update AFTER UPDATE ON quota_sched.agent
	FOR EACH ROW WHEN (OLD.name IS DISTINCT FROM NEW.name
					   OR OLD.job_queue IS DISTINCT FROM NEW.job_queue
					   OR OLD.capacity_unit IS DISTINCT FROM NEW.capacity_unit
					   OR OLD.instances IS DISTINCT FROM NEW.instances
					   OR OLD.state IS DISTINCT FROM NEW.state
					   OR OLD.labels IS DISTINCT FROM NEW.labels
					   OR OLD.lease IS DISTINCT FROM NEW.lease
					   OR (OLD.last_seen IS DISTINCT FROM NEW.last_seen
						   AND OLD.last_seen + coalesce(OLD.lease, interval '60 seconds')
							   <= clock_timestamp()))
	EXECUTE FUNCTION quota_sched.queue_generation('agent_change');
CREATE TRIGGER agent_hosts_truncate AFTER TRUNCATE ON quota_sched.agent
	FOR EACH STATEMENT EXECUTE FUNCTION quota_sched.queue_generation('agent_change');

/*
 * A multi-host job's rendezvous (issue 40; doc/agents.md "Running a
 * multi-host job"): attempt_started() takes the port that rank 0's agent
 * chose, kept in the attempt's row (job_attempt.port, tables.sql) and in
 * rank 0's part (job_part.port); with the devices, its new signature (the
 * function of 0.3 is dropped above; agent_api.sql makes the new one, with
 * its grants, and job_peers(), and the view job_attempts with port at its
 * end).
 */
ALTER TABLE quota_sched.job_attempt
	ADD COLUMN port integer,
	ADD CONSTRAINT job_attempt_port_check CHECK (port BETWEEN 1 AND 65535);

/*
 * The classes of placement constraints a pass keeps (issue 39, item 6;
 * tables.sql has the comments): a generation of a queue's classes per job
 * with placement constraints that enters its share's order.  0.3 has no
 * such jobs: the table starts empty.  job_constrained_changed() is made
 * here for its triggers, and again by the sources (triggers.sql) with its
 * body.
 */
CREATE SEQUENCE quota_sched.constrained_change_seq;
CREATE TABLE quota_sched.constrained_change (
	job_queue		text NOT NULL,
	generation		bigint NOT NULL
);
CREATE INDEX constrained_change_queue ON quota_sched.constrained_change (job_queue, generation);
SELECT pg_catalog.pg_extension_config_dump('quota_sched.constrained_change', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.constrained_change_seq', '');
REVOKE ALL ON quota_sched.constrained_change FROM PUBLIC;
REVOKE ALL ON SEQUENCE quota_sched.constrained_change_seq FROM PUBLIC;
CREATE FUNCTION quota_sched.job_constrained_changed() RETURNS trigger
LANGUAGE plpgsql AS 'BEGIN RETURN NULL; END';
CREATE TRIGGER job_constrained_update
	AFTER UPDATE OF state, dependencies_waiting ON quota_sched.job
	FOR EACH ROW WHEN (NEW.state = 'RUNNABLE' AND NEW.dependencies_waiting IS NULL
					   AND (NEW.instances_per_host IS NOT NULL OR NEW.same_label IS NOT NULL)
					   AND (OLD.state <> 'RUNNABLE' OR OLD.dependencies_waiting IS NOT NULL))
	EXECUTE FUNCTION quota_sched.job_constrained_changed();

/*
 * The preemptions the history trigger keeps (issue 42, item 7; tables.sql
 * has the comments): job_preemption, filled here from the history of 0.3
 * as the view preemptions of 0.3 derived it: per STATE event with a
 * preempted_for, how long the attempt ran since the job's last dispatch
 * before it, and both jobs' share, owner and name (a preemptor whose job
 * is gone keeps the share of its first event).
 */
CREATE TABLE quota_sched.job_preemption (
	victim_job		bigint NOT NULL,
	event_id		bigint NOT NULL,
	at				timestamptz NOT NULL,
	job_queue		text,
	capacity_unit	text,
	instance_count	integer,
	victim_share	text,
	victim_owner	name,
	victim_name		text,
	victim_ran		interval,
	preemptor_job	bigint NOT NULL,
	preemptor_share	text,
	preemptor_owner	name,
	preemptor_name	text,
	reason			text,
	PRIMARY KEY (victim_job, event_id)
);
CREATE INDEX job_preemption_at ON quota_sched.job_preemption (at);
CREATE INDEX job_preemption_preemptor ON quota_sched.job_preemption (preemptor_job);
SELECT pg_catalog.pg_extension_config_dump('quota_sched.job_preemption', '');
REVOKE ALL ON quota_sched.job_preemption FROM PUBLIC;
INSERT INTO quota_sched.job_preemption
SELECT e.job_id, e.id, e.at, e.job_queue, e.capacity_unit, e.instance_count, e.quota_share,
	   v.owner, v.name,
	   e.at - (SELECT s.at FROM quota_sched.job_event s
				WHERE s.job_id = e.job_id AND s.id < e.id AND s.kind = 'STATE'
				  AND s.to_state = 'SCHEDULED'
				ORDER BY s.id DESC LIMIT 1),
	   e.preempted_for,
	   coalesce(p.quota_share,
				(SELECT s.quota_share FROM quota_sched.job_event s
				  WHERE s.job_id = e.preempted_for ORDER BY s.id LIMIT 1)),
	   p.owner, p.name, e.reason
  FROM quota_sched.job_event e
	   LEFT JOIN quota_sched.job v ON v.id = e.job_id
	   LEFT JOIN quota_sched.job p ON p.id = e.preempted_for
 WHERE e.kind = 'STATE' AND e.preempted_for IS NOT NULL;

/*
 * The shares a pass keeps (issue 42, item 3; tables.sql has the
 * comments): a generation of a queue's shares per change of one.  The
 * table starts empty; its triggers call queue_generation(), as
 * agent_change's do.
 */
CREATE SEQUENCE quota_sched.share_change_seq;
CREATE TABLE quota_sched.share_change (
	job_queue		text NOT NULL,
	generation		bigint NOT NULL
);
CREATE INDEX share_change_queue ON quota_sched.share_change (job_queue, generation);
SELECT pg_catalog.pg_extension_config_dump('quota_sched.share_change', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.share_change_seq', '');
REVOKE ALL ON quota_sched.share_change FROM PUBLIC;
REVOKE ALL ON SEQUENCE quota_sched.share_change_seq FROM PUBLIC;
CREATE TRIGGER quota_share_generation
	AFTER INSERT OR UPDATE OR DELETE ON quota_sched.quota_share
	FOR EACH ROW EXECUTE FUNCTION quota_sched.queue_generation('share_change');
CREATE TRIGGER quota_share_generation_truncate AFTER TRUNCATE ON quota_sched.quota_share
	FOR EACH STATEMENT EXECUTE FUNCTION quota_sched.queue_generation('share_change');

/*
 * The floors of the scans of RUNNABLE jobs, of unclaimed ones and of leases
 * (issue 42, item 5; tables.sql has the comments), last, so that no write of this step
 * fires it.  job_scan_floor() is made again by the sources (triggers.sql).
 */
CREATE FUNCTION quota_sched.job_scan_floor() RETURNS trigger
AS 'MODULE_PATHNAME', 'qs_job_scan_floor' LANGUAGE C;
CREATE TRIGGER job_scan_floor BEFORE UPDATE ON quota_sched.job
	FOR EACH ROW WHEN (NEW.state IN ('RUNNABLE', 'SCHEDULED', 'STARTING', 'RUNNING')
					   OR OLD.state = 'RUNNABLE')
	EXECUTE FUNCTION quota_sched.job_scan_floor();
CREATE TRIGGER job_scan_floor_delete BEFORE DELETE ON quota_sched.job
	FOR EACH ROW WHEN (OLD.state = 'RUNNABLE')
	EXECUTE FUNCTION quota_sched.job_scan_floor();
CREATE TRIGGER job_scan_floor_truncate AFTER TRUNCATE ON quota_sched.job
	FOR EACH STATEMENT EXECUTE FUNCTION quota_sched.job_scan_floor();
ALTER TABLE quota_sched.job ENABLE ALWAYS TRIGGER job_scan_floor;
ALTER TABLE quota_sched.job ENABLE ALWAYS TRIGGER job_scan_floor_delete;
ALTER TABLE quota_sched.job ENABLE ALWAYS TRIGGER job_scan_floor_truncate;

/*
 * The counters a pass keeps (issue 42, item 3; tables.sql has the
 * comments), after every write of this step to held_capacity.
 * held_capacity_written() is made again by the sources (triggers.sql).
 */
CREATE FUNCTION quota_sched.held_capacity_written() RETURNS trigger
AS 'MODULE_PATHNAME', 'qs_held_capacity_written' LANGUAGE C;
CREATE TRIGGER held_capacity_written
	AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON quota_sched.held_capacity
	FOR EACH STATEMENT EXECUTE FUNCTION quota_sched.held_capacity_written();
ALTER TABLE quota_sched.held_capacity ENABLE ALWAYS TRIGGER held_capacity_written;
/* and the memory of borrowing a pass keeps with them (tables.sql) */
CREATE TRIGGER held_change_written
	AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON quota_sched.held_change
	FOR EACH STATEMENT EXECUTE FUNCTION quota_sched.held_capacity_written();
ALTER TABLE quota_sched.held_change ENABLE ALWAYS TRIGGER held_change_written;
CREATE TRIGGER borrow_memory_written
	AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON quota_sched.borrow_memory
	FOR EACH STATEMENT EXECUTE FUNCTION quota_sched.held_capacity_written();
ALTER TABLE quota_sched.borrow_memory ENABLE ALWAYS TRIGGER borrow_memory_written;

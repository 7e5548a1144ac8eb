/*
 * tables.sql
 *		Every table, sequence and index of the extension, the tables'
 *		triggers, what pg_dump dumps of them, and their privileges.
 *
 * Run by the install script only: an update changes these objects in its
 * own script (sql/updates/), then this file is changed to match, so that
 * a fresh install and an updated database have the same catalog
 * (test/t/006_upgrade.pl compares them).  Columns are in the order an
 * update leaves them (an added column comes last).  Every column that
 * holds a kind of word (a state, a strategy, ...) has a CHECK named
 * TABLE_word_COLUMN that casts it to the kind's domain (words.sql), the
 * one list of its words in SQL.
 */

/* ---------------------------------------------------------------------
 * Configuration (scheduling.md 2): environments, queues, shares.
 * ------------------------------------------------------------------- */

CREATE TABLE quota_sched.service_environment (
	name			text PRIMARY KEY
		CHECK (quota_sched.check_name(name, 'service environment')),
	capacity_limits jsonb NOT NULL DEFAULT '{}'
		CHECK (quota_sched.check_capacity_map(capacity_limits, 'service environment ' || name)),
	state			text NOT NULL DEFAULT 'ENABLED'
		CHECK (quota_sched.check_state(state, 'service environment ' || name)),
	CONSTRAINT service_environment_word_state CHECK (state::quota_sched.config_state IS NOT NULL)
);

CREATE TABLE quota_sched.job_queue (
	name			text PRIMARY KEY
		CHECK (quota_sched.check_name(name, 'job queue')),
	service_environment text NOT NULL UNIQUE
		REFERENCES quota_sched.service_environment (name) ON UPDATE CASCADE,
	state			text NOT NULL DEFAULT 'ENABLED'
		CHECK (quota_sched.check_state(state, 'job queue ' || name)),
	runnable_timeout interval
		CHECK (quota_sched.check_runnable_timeout(runnable_timeout, 'job queue ' || name)),
	borrow_order	text NOT NULL DEFAULT 'FIFO'
		CHECK (quota_sched.check_choice(borrow_order, 'borrow_order', 'job queue ' || name)),
	claim_timeout	interval DEFAULT '5 minutes'
		CHECK (quota_sched.check_claim_timeout(claim_timeout, 'job queue ' || name)),
	fair_half_life	interval,
	CONSTRAINT job_queue_fair_half_life_check
		CHECK (quota_sched.check_fair_half_life(fair_half_life, borrow_order, 'job queue ' || name)),
	CONSTRAINT job_queue_word_state CHECK (state::quota_sched.config_state IS NOT NULL),
	CONSTRAINT job_queue_word_borrow_order
		CHECK (borrow_order::quota_sched.borrow_order IS NOT NULL),
	/* how long after a lease ran out the pass takes its job back (scheduling.md 3.10) */
	fence_grace		interval NOT NULL DEFAULT '10 seconds'
		CHECK (quota_sched.check_fence_grace(fence_grace, 'job queue ' || name))
);

/*
 * The CHECKs of quota_share that read two columns are named as 0.1 and 0.2
 * named them when they added them one by one, so that a fresh install and
 * an updated database have the same constraints.
 */
CREATE TABLE quota_sched.quota_share (
	job_queue		text NOT NULL
		REFERENCES quota_sched.job_queue (name) ON DELETE CASCADE,
	name			text NOT NULL
		CHECK (quota_sched.check_name(name, 'quota share')),
	capacity_limits jsonb NOT NULL DEFAULT '{}',
	strategy		text NOT NULL,
	borrow_limit	integer NOT NULL DEFAULT -1,
	in_share_preemption boolean NOT NULL DEFAULT false,
	state			text NOT NULL DEFAULT 'ENABLED',
	submit_role		name,
	lend_limit		integer NOT NULL DEFAULT -1,
	queueing		text NOT NULL DEFAULT 'BEST_EFFORT',
	min_runtime		interval,
	weight			integer NOT NULL DEFAULT 1,
	budget			jsonb NOT NULL DEFAULT '{}',
	budget_period	text NOT NULL DEFAULT 'MONTH',
	PRIMARY KEY (job_queue, name),
	CONSTRAINT quota_share_check
		CHECK (quota_sched.check_capacity_map(capacity_limits, 'quota share ' || name)),
	CONSTRAINT quota_share_check1 CHECK (quota_sched.check_state(state, 'quota share ' || name)),
	CONSTRAINT quota_share_check2
		CHECK (quota_sched.check_strategy(strategy, borrow_limit, 'quota share ' || name)),
	CONSTRAINT quota_share_check3
		CHECK (quota_sched.check_choice(queueing, 'queueing', 'quota share ' || name)),
	CONSTRAINT quota_share_check4
		CHECK (quota_sched.check_min_runtime(min_runtime, 'quota share ' || name)),
	CONSTRAINT quota_share_check5 CHECK (quota_sched.check_weight(weight, 'quota share ' || name)),
	CONSTRAINT quota_share_check6
		CHECK (quota_sched.check_lend_limit(strategy, lend_limit, 'quota share ' || name)),
	CONSTRAINT quota_share_budget_check
		CHECK (quota_sched.check_budget(budget, 'quota share ' || name)),
	CONSTRAINT quota_share_budget_period_check
		CHECK (quota_sched.check_choice(budget_period, 'budget_period', 'quota share ' || name)),
	CONSTRAINT quota_share_word_strategy CHECK (strategy::quota_sched.strategy IS NOT NULL),
	CONSTRAINT quota_share_word_state CHECK (state::quota_sched.config_state IS NOT NULL),
	CONSTRAINT quota_share_word_queueing CHECK (queueing::quota_sched.queueing IS NOT NULL),
	CONSTRAINT quota_share_word_budget_period
		CHECK (budget_period::quota_sched.budget_period IS NOT NULL)
);

/* ---------------------------------------------------------------------
 * Jobs.  System columns have no defaults: the insert trigger fills them and
 * refuses a value given by the submitter.  agent_role is the login that
 * claimed the job: only it (or an admin) may heartbeat, report on or
 * release the job afterwards; jobs claimed before 0.2 have none, and any
 * agent login may act on them.  The fleet's columns (0.3, scheduling.md
 * 3.10): lease_losses counts leases that ran out (past max_lease_losses,
 * which the submitter may set, the job fails); claim_requeues counts the
 * times no agent claimed it within its queue's claim_timeout, and
 * claim_backoff_until holds it back from dispatch after such a requeue.
 * The placement constraints (0.4, scheduling.md 3.13), set by the
 * submitter and fixed after: instances_per_host (null: any split) divides
 * instance_count, and same_label (null: none) is a label key.  The insert
 * trigger checks both with a clear message; the CHECKs say the same.
 * Arrays (0.4, scheduling.md 3.16): an INSERT with array_size (2 to
 * 10,000) submits that many jobs, index 0 the row inserted and the others
 * made by the same statement (by job_history()); each has array_id (the id
 * of index 0) and array_index, and its name the suffix [index].
 * Dependencies (0.4, scheduling.md 3.17): depends_on (at most 100 ids,
 * set at the INSERT only) names jobs, or arrays by their array_id, that
 * must SUCCEED before the job is dispatched; the system keeps
 * dependencies_waiting (how many of them have not SUCCEEDED; null: none),
 * dependency_failed (one that FAILED: the pass fails the job) and, on the
 * jobs depended on, has_dependents (true; null: none, so that only their
 * end looks for dependents).  Null is "none" for all three, so that a job
 * written without them (a restore, a load that bypasses the triggers) is
 * one with no dependencies.
 * ------------------------------------------------------------------- */

CREATE SEQUENCE quota_sched.job_id_seq;

CREATE TABLE quota_sched.job (
	id				bigint PRIMARY KEY,
	name			text NOT NULL,
	job_queue		text NOT NULL,
	quota_share		text NOT NULL,
	priority		integer NOT NULL DEFAULT 0,
	capacity_unit	text NOT NULL,
	instance_count	integer NOT NULL,
	payload			jsonb,
	max_attempts	integer NOT NULL DEFAULT 1,
	preemption_retries integer,
	timeout			interval,
	client_token	text UNIQUE,
	tags			jsonb,
	owner			name NOT NULL,
	state			text NOT NULL,
	status_reason	text,
	status_reason_at timestamptz,
	stop_reason		text,
	stop_requested_at timestamptz,
	preempted_for	bigint,
	promised_at		timestamptz,
	agent			text,
	lease_until		timestamptz,
	failed_attempts integer NOT NULL,
	preemption_count integer NOT NULL,
	submitted_at	timestamptz NOT NULL,
	queued_at		timestamptz NOT NULL,
	scheduled_at	timestamptz,
	started_at		timestamptz,
	stopped_at		timestamptz,
	agent_role		name,
	max_lease_losses integer NOT NULL DEFAULT 3,
	lease_losses	integer NOT NULL,
	claim_requeues	integer NOT NULL,
	claim_backoff_until timestamptz,
	instances_per_host integer,
	same_label		text,
	part_agents		text[],
	part_instances	integer[],
	array_size		integer,
	array_id		bigint,
	array_index		integer,
	depends_on		bigint[],
	dependencies_waiting integer,
	dependency_failed bigint,
	has_dependents	boolean,
	CONSTRAINT job_share_fkey FOREIGN KEY (job_queue, quota_share)
		REFERENCES quota_sched.quota_share (job_queue, name) ON DELETE CASCADE,
	CONSTRAINT job_word_state CHECK (state::quota_sched.job_state IS NOT NULL),
	CONSTRAINT job_word_stop_reason
		CHECK (stop_reason IS NULL OR stop_reason::quota_sched.stop_reason IS NOT NULL),
	CONSTRAINT job_instances_per_host_check
		CHECK (instances_per_host BETWEEN 1 AND instance_count
			   AND instance_count % instances_per_host = 0),
	CONSTRAINT job_same_label_check CHECK (same_label ~ '^[a-z0-9_.-]{1,63}$'),
	CONSTRAINT job_array_size_check CHECK (array_size BETWEEN 2 AND 10000),
	CONSTRAINT job_depends_on_check CHECK (cardinality(depends_on) <= 100),
	CONSTRAINT job_dependencies_waiting_check CHECK (dependencies_waiting > 0),
	CONSTRAINT job_has_dependents_check CHECK (has_dependents)
);

ALTER SEQUENCE quota_sched.job_id_seq OWNED BY quota_sched.job.id;

/*
 * The heads of each share's RUNNABLE jobs of a unit, in share order
 * (scheduling.md 3.2); also the loose index scan for the (share, unit)
 * pairs with jobs.  A job waiting for dependencies is in no share's order
 * (3.17): this index and the pass's others of RUNNABLE jobs leave it out,
 * so that a pass reads none of them.
 */
CREATE INDEX job_runnable_share_order ON quota_sched.job
	(job_queue, quota_share, capacity_unit, priority DESC, queued_at, id)
	WHERE state = 'RUNNABLE' AND dependencies_waiting IS NULL;
/* Promised jobs (3.6) and misconfigured ones (3.7, 3.9). */
CREATE INDEX job_promised ON quota_sched.job (job_queue, promised_at, id)
	WHERE state = 'RUNNABLE' AND promised_at IS NOT NULL;
CREATE INDEX job_misconfigured ON quota_sched.job (job_queue, status_reason_at)
	WHERE state = 'RUNNABLE' AND status_reason LIKE 'MISCONFIGURATION:%';
/* Jobs larger than every live agent (3.10), for clearing their reason. */
CREATE INDEX job_no_agent_fits ON quota_sched.job (job_queue, quota_share, capacity_unit)
	WHERE state = 'RUNNABLE' AND status_reason = 'NO_AGENT_FITS';
/* RUNNABLE jobs of a share whose budget of the unit is spent (3.11) */
CREATE INDEX job_budget_exhausted ON quota_sched.job (job_queue, quota_share, capacity_unit)
	WHERE state = 'RUNNABLE' AND status_reason LIKE 'BUDGET_EXHAUSTED%';
/*
 * Unclaimed jobs, oldest first (claim: those not placed, which any agent
 * may claim; the claim timeout); jobs of several parts some of which are claimed (the claim
 * timeout, scheduling.md 3.14); the RUNNABLE jobs with placement
 * constraints of each share and unit, in share order (their reader, 3.13)
 * and by class and size (the classes; whether a class has a job below its
 * skip bound); the jobs waiting for hosts (a unit no longer placed clears
 * their reason, 3.13).
 */
CREATE INDEX job_claimable ON quota_sched.job (job_queue, scheduled_at, id)
	WHERE state = 'SCHEDULED' AND agent IS NULL;
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
/* The jobs of an array (terminate(array => true); depends_on). */
CREATE INDEX job_array ON quota_sched.job (array_id) WHERE array_id IS NOT NULL;
/*
 * The jobs waiting for a job that ends (scheduling.md 3.17: only when it
 * has_dependents), and those a dependency of which failed, which the pass
 * fails.
 */
CREATE INDEX job_dependents ON quota_sched.job USING gin (depends_on)
	WHERE state = 'RUNNABLE' AND depends_on IS NOT NULL;
CREATE INDEX job_dependency_failed ON quota_sched.job (job_queue, id)
	WHERE state = 'RUNNABLE' AND dependency_failed IS NOT NULL;
CREATE INDEX job_placement_reason ON quota_sched.job (job_queue, capacity_unit)
	WHERE state = 'RUNNABLE' AND status_reason IN ('WAITING_FOR_HOSTS', 'NO_AGENT_FITS');
/* The smallest waiting jobs of a lender, per unit (wanted capacity, 3.2). */
CREATE INDEX job_runnable_by_size ON quota_sched.job
	(job_queue, quota_share, capacity_unit, instance_count)
	WHERE state = 'RUNNABLE' AND dependencies_waiting IS NULL;
/* An agent's held jobs (heartbeat). */
CREATE INDEX job_agent_held ON quota_sched.job (agent)
	WHERE state IN ('SCHEDULED', 'STARTING', 'RUNNING');
/*
 * What a pass reads of the held jobs, and only what it needs: those whose
 * lease expired or whose attempt passed its deadline, those stopping for a
 * promised job, and, when it looks for victims, a share's jobs in victim
 * order (3.4), as far as it goes.
 */
CREATE INDEX job_victim_order ON quota_sched.job
	(job_queue, quota_share, capacity_unit, priority, scheduled_at DESC, id DESC)
	WHERE state IN ('SCHEDULED', 'STARTING', 'RUNNING') AND stop_reason IS NULL;
CREATE INDEX job_lease ON quota_sched.job (job_queue, lease_until)
	WHERE state IN ('SCHEDULED', 'STARTING', 'RUNNING') AND agent IS NOT NULL;
CREATE INDEX job_deadline ON quota_sched.job
	(job_queue, quota_sched.attempt_deadline(started_at, timeout))
	WHERE state = 'RUNNING' AND timeout IS NOT NULL AND stop_reason IS NULL;
CREATE INDEX job_stopping_for ON quota_sched.job (job_queue, preempted_for)
	WHERE state IN ('SCHEDULED', 'STARTING', 'RUNNING') AND stop_reason IS NOT NULL
	  AND preempted_for IS NOT NULL;
/*
 * Held jobs claimed while their unit was not placed (part_agents null, an
 * agent set: claimed before 0.4, or before the unit's agents registered):
 * they hold their instances on that agent's host (scheduling.md 3.13), and
 * a pass of a placed unit reads them here beside the counters of what the
 * hosts hold (host_held).  Empty for a placed unit in the steady state.
 */
CREATE INDEX job_held_unplaced ON quota_sched.job (job_queue, capacity_unit)
	WHERE state IN ('SCHEDULED', 'STARTING', 'RUNNING') AND part_agents IS NULL
	  AND agent IS NOT NULL;
/* Ended jobs, oldest first (prune). */
CREATE INDEX job_ended ON quota_sched.job (status_reason_at)
	WHERE state IN ('SUCCEEDED', 'FAILED');

/* ---------------------------------------------------------------------
 * Counters of held capacity (scheduling.md 3.1): per queue, share and
 * unit, the instances held by SCHEDULED, STARTING and RUNNING jobs, those
 * of them whose stop is pending, and how many jobs hold them.  A pass reads
 * these rows instead of the jobs.
 *
 * Every change of a job's state or stop_reason adds its difference, in the
 * same transaction (the job_usage triggers, src/usage.c), to one of a few
 * stripes of its counter: the stripe of the backend that makes it (1 + its
 * process number modulo 15), so that concurrent reports rarely wait for
 * one another's row, or stripe 0 for a pass, which nobody else writes (a
 * pass never waits for a counter's row).  A counter is the sum of its stripes; rows are only
 * ever updated in place (no index column changes, room left on each page),
 * so they leave no dead index entries behind however fast jobs churn.
 * Nobody else writes them.
 *
 * Each stripe also keeps what its instances were held for (spent(S,u) of
 * scheduling.md 3.11, in instance-seconds): changed_at is the time of its
 * last change (the transaction's start, as job_event.at), and spent_day,
 * spent_week and spent_month what it held from the start of the calendar
 * day, week and month (UTC) of changed_at up to changed_at; it has held
 * `instances` since.  So spent is known at any time in closed form
 * (quota_sched.spent_at) for every budget_period, and changing a share's
 * budget or period needs no history.
 * ------------------------------------------------------------------- */

CREATE TABLE quota_sched.held_capacity (
	job_queue		text NOT NULL,
	quota_share		text NOT NULL,
	capacity_unit	text NOT NULL,
	stripe			smallint NOT NULL,
	instances		bigint NOT NULL,
	stopping_instances bigint NOT NULL,
	jobs			bigint NOT NULL,
	changed_at		timestamptz NOT NULL,
	spent_day		double precision NOT NULL,
	spent_week		double precision NOT NULL,
	spent_month		double precision NOT NULL,
	PRIMARY KEY (job_queue, quota_share, capacity_unit, stripe)
) WITH (fillfactor = 50);

/*
 * What the hosts hold (scheduling.md 3.13; issue 39, item 6): per queue,
 * unit and agent, the instances held by the parts (part_agents,
 * part_instances) of SCHEDULED, STARTING and RUNNING jobs placed on it,
 * and those of them whose stop is pending: the sum of a row of host_held
 * and of the rows of host_held_change of the same queue, unit and agent.
 *
 * The job_usage triggers (src/pass/host_usage.c) that see a change of what
 * the hosts hold insert its difference into host_held_change, in the same
 * transaction, a row per unit and agent, of a new generation of
 * host_held_change_seq (never reused): writers only insert, so none waits
 * for another.  A pass that places a job of the queue reads its rows of
 * host_held_change; when there are many, it folds them into host_held
 * (deletes them and adds them up there: only passes of the queue, one at a
 * time, write host_held) and inserts a row of a new generation with no
 * unit, the fold's mark, in place of the last.  A pass keeps the rows of
 * host_held it read with the mark it saw (src/pass/host_cache.c): host_held
 * changes only with a new mark, so two snapshots that see the same mark see
 * the same host_held, and a pass reads only the changes since.  Rows of
 * agents that hold nothing are kept (at zero): updated in place when the
 * agent holds again.
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
	capacity_unit	text,			/* null: a fold's mark */
	agent			text,
	instances		bigint NOT NULL DEFAULT 0,
	stopping_instances bigint NOT NULL DEFAULT 0
);
CREATE INDEX host_held_change_queue ON quota_sched.host_held_change (job_queue, generation);

/* ---------------------------------------------------------------------
 * Passes and the history of jobs.
 *
 * job_event holds a job's complete history (accounting): besides each
 * change of state (kind STATE), the requests to stop (STOP, with the
 * reason and the job it makes room for; TERMINATE when a user asked, the
 * user being the actor), priority changes (PRIORITY: old_priority,
 * priority), and promises made and lapsed (PROMISE, PROMISE_LAPSED).  An
 * event that ends an attempt carries the exit code its agent reported, and
 * the job it made room for when preemption ended it.  Every event carries
 * what accounting needs without a join to the job, which may be deleted
 * later: queue, share, unit, instance count, the attempt during which it
 * happened (1 + failed_attempts + preemption_count + lease_losses before the change),
 * and the job's priority.  A dispatch carries how long the job waited
 * since it last became RUNNABLE (waited).
 * ------------------------------------------------------------------- */

CREATE SEQUENCE quota_sched.pass_log_id_seq;

CREATE TABLE quota_sched.pass_log (
	id				bigint PRIMARY KEY DEFAULT nextval('quota_sched.pass_log_id_seq'),
	job_queue		text NOT NULL
		REFERENCES quota_sched.job_queue (name) ON DELETE CASCADE,
	started_at		timestamptz NOT NULL,
	finished_at		timestamptz NOT NULL,
	dispatched		integer NOT NULL DEFAULT 0,
	preempted		integer NOT NULL DEFAULT 0,
	requeued		integer NOT NULL DEFAULT 0,
	failed			integer NOT NULL DEFAULT 0
);

ALTER SEQUENCE quota_sched.pass_log_id_seq OWNED BY quota_sched.pass_log.id;

CREATE SEQUENCE quota_sched.job_event_id_seq;

CREATE TABLE quota_sched.job_event (
	id				bigint PRIMARY KEY DEFAULT nextval('quota_sched.job_event_id_seq'),
	job_id			bigint NOT NULL,	/* quota_sched.job (id); see job_history_delete */
	at				timestamptz NOT NULL,
	pass_id			bigint,
	from_state		text,
	to_state		text NOT NULL,
	reason			text,
	actor			text NOT NULL,
	kind			text NOT NULL DEFAULT 'STATE',
	job_queue		text,
	quota_share		text,
	capacity_unit	text,
	instance_count	integer,
	attempt			integer,
	priority		integer,
	old_priority	integer,
	preempted_for	bigint,
	exit_code		integer,
	waited			interval,
	CONSTRAINT job_event_word_from_state
		CHECK (from_state IS NULL OR from_state::quota_sched.job_state IS NOT NULL),
	CONSTRAINT job_event_word_to_state CHECK (to_state::quota_sched.job_state IS NOT NULL),
	CONSTRAINT job_event_word_kind CHECK (kind::quota_sched.event_kind IS NOT NULL)
);

ALTER SEQUENCE quota_sched.job_event_id_seq OWNED BY quota_sched.job_event.id;

CREATE INDEX job_event_job ON quota_sched.job_event (job_id, id);
/*
 * Reports read the history by time (the hours after the rollup): events
 * are written in about the order of their times, so a BRIN index finds
 * them at almost no cost to the writes.
 */
CREATE INDEX job_event_at ON quota_sched.job_event USING brin (at);

/*
 * job_preemption: each attempt that a preemption ended, as the view
 * preemptions shows it, written by the history trigger beside the job's
 * STATE event that ended it (event_id; the event stays the record) with
 * what the view would otherwise look up row by row in a month of history
 * (issue 42, item 7): how long the attempt ran since its dispatch
 * (victim_ran: the event's at less the job's scheduled_at), and both
 * jobs' share, owner and name (a job's are fixed once it is submitted).
 * Deleted with its victim; the preemptor's owner and name are cleared
 * when it is deleted (job_history_delete).  Only the view reads it.
 */
CREATE TABLE quota_sched.job_preemption (
	victim_job		bigint NOT NULL,	/* quota_sched.job (id); see job_history_delete */
	event_id		bigint NOT NULL,	/* quota_sched.job_event (id) */
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

/*
 * queue_status: per queue, the jobs its passes passed over because
 * another transaction held their rows locked (at most 100, by id), since
 * when, and for how many passes in a row.  Only the pass writes it; the
 * row of a queue appears at the first job passed over.
 */
CREATE TABLE quota_sched.queue_status (
	job_queue		text PRIMARY KEY
		REFERENCES quota_sched.job_queue (name) ON DELETE CASCADE,
	passed_over		bigint[] NOT NULL,
	passed_over_since timestamptz,
	passed_over_passes integer NOT NULL
);

/* ---------------------------------------------------------------------
 * The history of the configuration: one config_event row for each INSERT,
 * UPDATE and DELETE of an environment, queue or share, in the transaction
 * that makes it (config_history, triggers.sql), so that reports can tell
 * each share's and environment's capacity and limits at any past time.
 *
 * at is the transaction's start (as job_event.at); actor the role acting.
 * job_queue is null for an environment, the queue's name for a queue and a
 * share; name and job_queue are the new row's for an INSERT or UPDATE (a
 * rename is recorded under the new name, the old one in old), the old
 * row's for a DELETE.  old and new are the whole rows (to_jsonb; intervals
 * in IntervalStyle postgres, whatever the writer's session uses).  An
 * update of the extension that adds the history records the configuration
 * there is as BASELINE rows.  Changes made with the triggers off
 * (session_replication_role = replica, as a restore does) are not
 * recorded.  The index answers "the row of share (q, s) in force at time
 * t": the last of (object, job_queue, name) at or before t.
 * ------------------------------------------------------------------- */

CREATE SEQUENCE quota_sched.config_event_id_seq;

CREATE TABLE quota_sched.config_event (
	id				bigint PRIMARY KEY DEFAULT nextval('quota_sched.config_event_id_seq'),
	at				timestamptz NOT NULL,
	actor			text NOT NULL,
	object			text NOT NULL
		CHECK (object IN ('service_environment', 'job_queue', 'quota_share')),
	job_queue		text,
	name			text NOT NULL,
	action			text NOT NULL
		CHECK (action IN ('INSERT', 'UPDATE', 'DELETE', 'BASELINE')),
	old				jsonb,
	new				jsonb,
	CHECK ((job_queue IS NULL) = (object = 'service_environment')),
	CHECK ((old IS NULL) = (action IN ('INSERT', 'BASELINE'))
		   AND (new IS NULL) = (action = 'DELETE'))
);

ALTER SEQUENCE quota_sched.config_event_id_seq OWNED BY quota_sched.config_event.id;

CREATE INDEX config_event_object ON quota_sched.config_event (object, job_queue, name, at, id);

/* ---------------------------------------------------------------------
 * The hourly rollup (reporting_rollup.sql): per queue, share (null: the
 * environment) and unit, each hour's integrals and event counts, and the
 * levels at its end; usage_rollup says until when each queue is rolled up
 * (an hour's edge); usage_totals keeps the counts of usage_counters over
 * the hours rolled up, so that metrics() never goes back, however the
 * history is pruned.  Written by rollup() only.  (terminated and
 * preempted_early are last: the update to 0.3 adds them, and keeps 0 in
 * the rows rolled up before, whose failed counted terminations too.)
 * ------------------------------------------------------------------- */

CREATE TABLE quota_sched.usage_hourly (
	job_queue		text NOT NULL,
	quota_share		text,
	capacity_unit	text NOT NULL,
	hour			timestamptz NOT NULL,
	capacity		double precision NOT NULL,
	used			double precision NOT NULL,
	own				double precision NOT NULL,
	borrowed		double precision NOT NULL,
	idle			double precision NOT NULL,
	usage_end		bigint NOT NULL,
	capacity_end	bigint NOT NULL,
	dispatched		bigint NOT NULL,
	succeeded		bigint NOT NULL,
	failed			bigint NOT NULL,
	preempted		bigint NOT NULL,
	preempting		bigint NOT NULL,
	waits			real[] NOT NULL,
	terminated		bigint NOT NULL,	/* FAILED by a terminate(), not in failed */
	preempted_early	bigint NOT NULL		/* of preempted, after less than a minute */
);
CREATE UNIQUE INDEX usage_hourly_key ON quota_sched.usage_hourly
	(job_queue, hour, coalesce(quota_share, ''), capacity_unit);

CREATE TABLE quota_sched.usage_rollup (
	job_queue		text PRIMARY KEY,
	rolled_until	timestamptz NOT NULL,
	lent_until		timestamptz		/* lending_hourly's end (null: none yet) */
);

CREATE TABLE quota_sched.usage_totals (
	job_queue		text NOT NULL,
	quota_share		text NOT NULL,
	capacity_unit	text NOT NULL,
	counter			text NOT NULL,
	value			bigint NOT NULL,
	PRIMARY KEY (job_queue, quota_share, capacity_unit, counter)
);

/*
 * Who lent to whom (lending_parts in reporting_lending.sql): per queue, unit, hour,
 * lender (null: the environment's unassigned capacity) and borrower, the
 * instance-seconds the borrower held of the lender's capacity, for the
 * hours up to usage_rollup.lent_until.  Written by rollup() only.
 */
CREATE TABLE quota_sched.lending_hourly (
	job_queue		text NOT NULL,
	capacity_unit	text NOT NULL,
	hour			timestamptz NOT NULL,
	lender			text,
	borrower		text NOT NULL,
	instance_seconds double precision NOT NULL
);
CREATE UNIQUE INDEX lending_hourly_key ON quota_sched.lending_hourly
	(job_queue, hour, capacity_unit, coalesce(lender, ''), borrower);

/* ---------------------------------------------------------------------
 * The agents the scheduler knows (scheduling.md 3.10, doc/agents.md): one row per
 * agent name that called agent_ready, bound to the login that did (only
 * it, or an admin, refreshes the row), with what it says it can run: its
 * queue, unit and instances in all (null: no bound, as an external
 * launcher that provisions each job).  last_seen is its last agent_ready,
 * claim or heartbeat; lease the lease of its last claim or heartbeat
 * (null: it took none yet).  0.4 (doc/agents.md): its labels (a flat
 * object of strings), its address (how other hosts reach it; null: by its
 * name) and when it last became ACTIVE or DRAINING (state_changed_at: its
 * registration, a drain_agent that changed its state; for an agent
 * registered before 0.4, the update).  Written by the agents' functions
 * only (src/agents/fleet.c); read through the view agents.
 * ------------------------------------------------------------------- */

CREATE TABLE quota_sched.agent (
	name			text PRIMARY KEY,
	login			name NOT NULL,
	job_queue		text NOT NULL
		REFERENCES quota_sched.job_queue (name) ON DELETE CASCADE,
	capacity_unit	text NOT NULL,
	instances		integer,
	state			text NOT NULL DEFAULT 'ACTIVE',
	registered_at	timestamptz NOT NULL,
	last_seen		timestamptz NOT NULL,
	lease			interval,
	labels			jsonb NOT NULL DEFAULT '{}',
	address			text,
	state_changed_at timestamptz NOT NULL DEFAULT now(),
	CONSTRAINT agent_name_check CHECK (octet_length(name) BETWEEN 1 AND 128),
	CONSTRAINT agent_instances_check CHECK (instances IS NULL OR instances >= 1),
	CONSTRAINT agent_lease_check CHECK (lease IS NULL OR lease > interval '0'),
	CONSTRAINT agent_word_state CHECK (state::quota_sched.agent_state IS NOT NULL),
	CONSTRAINT agent_labels_check CHECK (quota_sched.check_agent_labels(labels, name)),
	CONSTRAINT agent_address_check
		CHECK (address IS NULL OR quota_sched.check_agent_address(address, name))
);
/* A queue's agents of a unit (the pass's agent bound, explain). */
CREATE INDEX agent_queue_unit ON quota_sched.agent (job_queue, capacity_unit);

/*
 * agent_change (issue 39, item 6): a row per change of a queue's agents
 * that changes its hosts (the agent_hosts_* triggers: an insert, a delete,
 * a change of instances, labels, state, capacity_unit, job_queue or lease,
 * and an UPDATE of an agent whose lease had run out, which brings it
 * back), but none for a heartbeat of a live agent; generation is a new
 * value of agent_change_seq, never reused.  Rows are only inserted, so no
 * writer waits for another (claim and heartbeat hold a queue's lock); the
 * pass of the queue replaces many by one (that only passes delete).  A
 * pass reads the generations of its queue in its snapshot, and keeps the
 * hosts it read while they are the same (src/pass/host_cache.c): two
 * snapshots that see the same rows see the same agents.
 */
CREATE SEQUENCE quota_sched.agent_change_seq;
CREATE TABLE quota_sched.agent_change (
	job_queue		text NOT NULL,
	generation		bigint NOT NULL
);
CREATE INDEX agent_change_queue ON quota_sched.agent_change (job_queue, generation);

/*
 * constrained_change (issue 39, item 6): a row per job with placement
 * constraints that enters its share's order, RUNNABLE with no dependency
 * waiting (submitted: written by job_history(); sent back, or its
 * dependencies done: the trigger job_constrained_update); generation is a
 * new value of
 * constrained_change_seq.  Inserted only, and replaced by one by the pass,
 * as agent_change.  A pass keeps the classes of placement constraints it
 * read (src/pass/host_cache.c) while its snapshot sees the same
 * generations: a class, or a job smaller than a class's smallest, comes
 * only with such a job.
 */
CREATE SEQUENCE quota_sched.constrained_change_seq;
CREATE TABLE quota_sched.constrained_change (
	job_queue		text NOT NULL,
	generation		bigint NOT NULL
);
CREATE INDEX constrained_change_queue ON quota_sched.constrained_change (job_queue, generation);

/*
 * share_change (issue 42, item 3): a row per change of a share (the
 * quota_share_generation triggers: an insert, an update, a delete, a
 * truncate, of its queue's and, moved, of the queue it left);
 * generation is a new value of share_change_seq.  Inserted only, and
 * replaced by one by the pass, as agent_change.  A pass keeps the shares
 * it read (src/pass/host_cache.c) while its snapshot sees the same
 * generations.
 */
CREATE SEQUENCE quota_sched.share_change_seq;
CREATE TABLE quota_sched.share_change (
	job_queue		text NOT NULL,
	generation		bigint NOT NULL
);
CREATE INDEX share_change_queue ON quota_sched.share_change (job_queue, generation);

/* ---------------------------------------------------------------------
 * agent_access (issue 37, item 2): the job queues an agent login may
 * serve, which admins write (INSERT, DELETE).  A login serves no queue
 * until an admin allows it one; a row with a null job_queue allows it
 * every queue.  A login also serves what a role it is a member of (with
 * INHERIT) is allowed, so that a fleet's logins may share one group
 * role's rows.  agent_ready() and claim() elsewhere are refused (42501);
 * a job claimed before access was taken away runs on to its end.  A row
 * deleted forgets the agents it no longer lets register
 * (agent_access_revoke, agent_api.sql).  Admins act for any agent.
 * ------------------------------------------------------------------- */

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

/* ---------------------------------------------------------------------
 * job_attempt (issue 21, "a job's own output"): what the agent that ran an
 * attempt of a job says of it, for "why did my job fail" without access to
 * the host: where it ran (host), where the agent keeps its output there
 * (log_path), the external launcher's handle, and at the attempt's end its
 * exit code and the last 4096 bytes of its output, the devices (GPUs)
 * its agent gave it (quota-sched-agent's --devices), and (0.4) the
 * rendezvous port of the attempt.  One row per (job,
 * attempt number, part: its rank, 0 for a job that is not placed); a run released (no attempt counted) and run again
 * under the same number replaces the row.  Written only by the agents'
 * functions (attempt_started, report, release: src/job_attempt.c) as the
 * job's agent; read by users through row-level security (policies.sql:
 * the rows of the jobs they see) and the view job_attempts.  The rows of
 * a deleted (pruned) job, or of a TRUNCATE of jobs, go with it (the
 * triggers of job_attempt_forget, agent_api.sql: no foreign key, which
 * would make a TRUNCATE of job need CASCADE).
 * ------------------------------------------------------------------- */

CREATE TABLE quota_sched.job_attempt (
	job_id			bigint NOT NULL,	/* quota_sched.job (id); see job_attempt_forget */
	attempt			integer NOT NULL,
	agent			text NOT NULL,
	host			text,
	log_path		text,
	handle			text,
	exit_code		integer,
	output			text,
	started_at		timestamptz,
	ended_at		timestamptz,
	rank			integer NOT NULL DEFAULT 0,	/* its part (scheduling.md 3.14) */
	devices			text[],		/* the host's devices the part was given (agents.md) */
	port			integer,	/* the rendezvous port rank 0's agent chose (0.4) */
	PRIMARY KEY (job_id, attempt, rank),
	CONSTRAINT job_attempt_attempt_check CHECK (attempt >= 1),
	CONSTRAINT job_attempt_host_check CHECK (octet_length(host) <= 255),
	CONSTRAINT job_attempt_log_path_check CHECK (octet_length(log_path) <= 4096),
	CONSTRAINT job_attempt_handle_check CHECK (octet_length(handle) <= 1024),
	CONSTRAINT job_attempt_output_check CHECK (octet_length(output) <= 4096),
	CONSTRAINT job_attempt_devices_check CHECK (cardinality(devices) BETWEEN 1 AND 256),
	CONSTRAINT job_attempt_port_check CHECK (port BETWEEN 1 AND 65535)
);

/* ---------------------------------------------------------------------
 * job_part (scheduling.md 3.14): the parts of each attempt of a job
 * placed on hosts, one row per part: its rank, the agent it is placed on
 * and that agent's address then, its instances, its state (PLACED by the
 * pass, CLAIMED and RUNNING by its agent, ENDED when it reported its end,
 * lost its lease or was released), its lease, the exit code it reported
 * and the rendezvous port rank 0's agent chose.  The job row keeps the
 * current attempt's placement in rank order (part_agents,
 * part_instances), which the pass reads with the job; a promised RUNNABLE
 * job's is the placement its promise reserves, with no part rows.
 * Written by the pass (dispatch) and the agents' functions; read by users
 * through row-level security (policies.sql) and the view job_parts.  A
 * job of a unit that is not placed has no rows (job_parts shows its one
 * part from the job).  Deleted with their job (job_attempt_forget).
 * ------------------------------------------------------------------- */

CREATE TABLE quota_sched.job_part (
	job_id			bigint NOT NULL,	/* quota_sched.job (id); see job_attempt_forget */
	placed_at		timestamptz NOT NULL,	/* the job's scheduled_at */
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
/* The parts placed on an agent that it has not ended (claim, heartbeat). */
CREATE INDEX job_part_agent ON quota_sched.job_part (agent, job_id)
	WHERE state IN ('PLACED', 'CLAIMED', 'RUNNING');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.job_part', '');
REVOKE ALL ON quota_sched.job_part FROM PUBLIC;
GRANT SELECT ON quota_sched.job_part TO quota_sched_admin, quota_sched_user, quota_sched_agent;

/* ---------------------------------------------------------------------
 * Triggers (their functions: triggers.sql).
 * ------------------------------------------------------------------- */

CREATE TRIGGER job_before_insert BEFORE INSERT ON quota_sched.job
	FOR EACH ROW EXECUTE FUNCTION quota_sched.job_before_insert();
CREATE TRIGGER job_before_update BEFORE UPDATE ON quota_sched.job
	FOR EACH ROW EXECUTE FUNCTION quota_sched.job_before_update();
CREATE TRIGGER job_before_delete BEFORE DELETE ON quota_sched.job
	FOR EACH ROW EXECUTE FUNCTION quota_sched.job_before_delete();
CREATE TRIGGER job_history_insert AFTER INSERT ON quota_sched.job
	FOR EACH ROW EXECUTE FUNCTION quota_sched.job_history();
CREATE TRIGGER job_history_update
	AFTER UPDATE OF state, stop_reason, priority, promised_at ON quota_sched.job
	FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state
					   OR (NEW.stop_reason IS NOT NULL
						   AND OLD.stop_reason IS DISTINCT FROM NEW.stop_reason)
					   OR OLD.priority IS DISTINCT FROM NEW.priority
					   OR (OLD.promised_at IS NULL) <> (NEW.promised_at IS NULL))
	EXECUTE FUNCTION quota_sched.job_history();
CREATE TRIGGER job_history_delete AFTER DELETE ON quota_sched.job
	REFERENCING OLD TABLE AS deleted_jobs
	FOR EACH STATEMENT EXECUTE FUNCTION quota_sched.job_history_delete();
CREATE TRIGGER job_usage_update
	AFTER UPDATE OF state, stop_reason, part_agents, part_instances ON quota_sched.job
	FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state
					   OR OLD.stop_reason IS DISTINCT FROM NEW.stop_reason
					   OR OLD.part_agents IS DISTINCT FROM NEW.part_agents
					   OR OLD.part_instances IS DISTINCT FROM NEW.part_instances)
	EXECUTE FUNCTION quota_sched.job_usage();
CREATE TRIGGER job_usage_delete AFTER DELETE ON quota_sched.job
	FOR EACH ROW WHEN (OLD.state IN ('SCHEDULED', 'STARTING', 'RUNNING'))
	EXECUTE FUNCTION quota_sched.job_usage();
CREATE TRIGGER job_usage_flush AFTER UPDATE OR DELETE OR TRUNCATE ON quota_sched.job
	FOR EACH STATEMENT EXECUTE FUNCTION quota_sched.job_usage_flush();
CREATE TRIGGER job_constrained_update
	AFTER UPDATE OF state, dependencies_waiting ON quota_sched.job
	FOR EACH ROW WHEN (NEW.state = 'RUNNABLE' AND NEW.dependencies_waiting IS NULL
					   AND (NEW.instances_per_host IS NOT NULL OR NEW.same_label IS NOT NULL)
					   AND (OLD.state <> 'RUNNABLE' OR OLD.dependencies_waiting IS NOT NULL))
	EXECUTE FUNCTION quota_sched.job_constrained_changed();

/*
 * The floors of the scans of RUNNABLE jobs, of unclaimed ones and of leases
 * that passes and claims repeat (src/jobs/scan_floor.c): a row version that
 * enters one is noted for the commit (a submission: by job_history()), and
 * so is one of a RUNNABLE job that an UPDATE or DELETE replaces, and a
 * TRUNCATE: the first RUNNABLE jobs a pass keeps are kept while none of
 * them changed (src/pass/heads_cache.c).  ENABLE ALWAYS: with
 * session_replication_role = replica too (a repair, a test's), so that no
 * UPDATE moves a job in or out unnoted; they do nothing while the
 * extension's scripts run.
 */
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
 * The counters a pass keeps (src/pass/usage_cache.c): every transaction
 * that writes held_capacity, whatever writes it, is counted in shared
 * memory until it ends, and its commit moves a count on, so that a pass
 * reads the counters again only after they changed.  ENABLE ALWAYS: with
 * session_replication_role = replica too.
 */
CREATE TRIGGER held_capacity_written
	AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON quota_sched.held_capacity
	FOR EACH STATEMENT EXECUTE FUNCTION quota_sched.held_capacity_written();
ALTER TABLE quota_sched.held_capacity ENABLE ALWAYS TRIGGER held_capacity_written;

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

CREATE TRIGGER service_environment_changed
	AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON quota_sched.service_environment
	FOR EACH STATEMENT EXECUTE FUNCTION quota_sched.config_changed();
CREATE TRIGGER job_queue_changed
	AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON quota_sched.job_queue
	FOR EACH STATEMENT EXECUTE FUNCTION quota_sched.config_changed();
CREATE TRIGGER quota_share_changed
	AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON quota_sched.quota_share
	FOR EACH STATEMENT EXECUTE FUNCTION quota_sched.config_changed();
CREATE TRIGGER quota_share_generation
	AFTER INSERT OR UPDATE OR DELETE ON quota_sched.quota_share
	FOR EACH ROW EXECUTE FUNCTION quota_sched.queue_generation('share_change');
CREATE TRIGGER quota_share_generation_truncate AFTER TRUNCATE ON quota_sched.quota_share
	FOR EACH STATEMENT EXECUTE FUNCTION quota_sched.queue_generation('share_change');

CREATE TRIGGER job_queue_before_delete BEFORE DELETE ON quota_sched.job_queue
	FOR EACH ROW EXECUTE FUNCTION quota_sched.refuse_delete_with_live_jobs();
CREATE TRIGGER quota_share_before_delete BEFORE DELETE ON quota_sched.quota_share
	FOR EACH ROW EXECUTE FUNCTION quota_sched.refuse_delete_with_live_jobs();

CREATE TRIGGER quota_share_plan_insert AFTER INSERT ON quota_sched.quota_share
	REFERENCING NEW TABLE AS changed
	FOR EACH STATEMENT EXECUTE FUNCTION quota_sched.warn_capacity_plan();
CREATE TRIGGER quota_share_plan_update AFTER UPDATE ON quota_sched.quota_share
	REFERENCING NEW TABLE AS changed
	FOR EACH STATEMENT EXECUTE FUNCTION quota_sched.warn_capacity_plan();
CREATE TRIGGER service_environment_plan_update AFTER UPDATE ON quota_sched.service_environment
	REFERENCING NEW TABLE AS changed
	FOR EACH STATEMENT EXECUTE FUNCTION quota_sched.warn_capacity_plan();
CREATE TRIGGER job_queue_plan_insert AFTER INSERT ON quota_sched.job_queue
	REFERENCING NEW TABLE AS changed
	FOR EACH STATEMENT EXECUTE FUNCTION quota_sched.warn_capacity_plan();

CREATE TRIGGER service_environment_history
	AFTER INSERT OR UPDATE OR DELETE ON quota_sched.service_environment
	FOR EACH ROW EXECUTE FUNCTION quota_sched.config_history();
CREATE TRIGGER service_environment_history_truncate
	BEFORE TRUNCATE ON quota_sched.service_environment
	FOR EACH STATEMENT EXECUTE FUNCTION quota_sched.config_history();
CREATE TRIGGER job_queue_history
	AFTER INSERT OR UPDATE OR DELETE ON quota_sched.job_queue
	FOR EACH ROW EXECUTE FUNCTION quota_sched.config_history();
CREATE TRIGGER job_queue_history_truncate
	BEFORE TRUNCATE ON quota_sched.job_queue
	FOR EACH STATEMENT EXECUTE FUNCTION quota_sched.config_history();
CREATE TRIGGER quota_share_history
	AFTER INSERT OR UPDATE OR DELETE ON quota_sched.quota_share
	FOR EACH ROW EXECUTE FUNCTION quota_sched.config_history();
CREATE TRIGGER quota_share_history_truncate
	BEFORE TRUNCATE ON quota_sched.quota_share
	FOR EACH STATEMENT EXECUTE FUNCTION quota_sched.config_history();

/* ---------------------------------------------------------------------
 * Fair share with memory (scheduling.md 3.12), for queues with a
 * fair_half_life.  held_change: every change of held capacity of such a
 * queue (the transaction's start, the share, the unit, the instances added
 * or taken), written by the job_usage_flush trigger (src/usage.c) in the
 * transaction of the change, inserted only, so that no writer waits for
 * another; the next pass reads the rows committed and deletes them.
 * borrow_memory: per share and unit, recent_borrow (instance-seconds) at
 * `at`, with the instances held then, after every change read, and the
 * capacity limit in force since: between two changes borrowed(S,u) is
 * constant, so the pass carries recent_borrow on in closed form from one
 * change to the next (src/borrow_memory.c).  Only the pass writes it, the
 * rows of the cells that changed.  half_life is the queue's when the
 * memory began: another one starts it again from 0.
 * ------------------------------------------------------------------- */

CREATE TABLE quota_sched.held_change (
	job_queue		text NOT NULL,
	quota_share		text NOT NULL,
	capacity_unit	text NOT NULL,
	at				timestamptz NOT NULL,
	delta			bigint NOT NULL
);
CREATE INDEX held_change_queue ON quota_sched.held_change (job_queue);

CREATE TABLE quota_sched.borrow_memory (
	job_queue		text NOT NULL
		REFERENCES quota_sched.job_queue (name) ON DELETE CASCADE,
	quota_share		text NOT NULL,
	capacity_unit	text NOT NULL,
	half_life		interval NOT NULL,
	at				timestamptz NOT NULL,
	held			bigint NOT NULL,
	capacity		bigint NOT NULL,
	recent			double precision NOT NULL,
	PRIMARY KEY (job_queue, quota_share, capacity_unit)
);

/*
 * A pass keeps the memory of borrowing it read, as it keeps the counters
 * (src/pass/borrow_memory.c): the writes of either table are counted with
 * those of the counters (held_capacity_written).
 */
CREATE TRIGGER held_change_written
	AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON quota_sched.held_change
	FOR EACH STATEMENT EXECUTE FUNCTION quota_sched.held_capacity_written();
ALTER TABLE quota_sched.held_change ENABLE ALWAYS TRIGGER held_change_written;
CREATE TRIGGER borrow_memory_written
	AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON quota_sched.borrow_memory
	FOR EACH STATEMENT EXECUTE FUNCTION quota_sched.held_capacity_written();
ALTER TABLE quota_sched.borrow_memory ENABLE ALWAYS TRIGGER borrow_memory_written;

/* ---------------------------------------------------------------------
 * Dump and restore: every table and sequence holding user data.
 * ------------------------------------------------------------------- */

SELECT pg_catalog.pg_extension_config_dump('quota_sched.service_environment', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.job_queue', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.quota_share', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.job', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.job_event', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.job_preemption', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.pass_log', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.job_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.job_event_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.pass_log_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.held_capacity', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.host_held', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.host_held_change', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.host_held_change_seq', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.agent_change', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.agent_change_seq', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.constrained_change', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.constrained_change_seq', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.share_change', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.share_change_seq', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.queue_status', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.config_event', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.config_event_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.usage_hourly', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.usage_rollup', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.usage_totals', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.lending_hourly', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.agent', '');
/* job_attempt (issue 21, a job's own output) */
SELECT pg_catalog.pg_extension_config_dump('quota_sched.job_attempt', '');
/* fair share with memory (scheduling.md 3.12) */
SELECT pg_catalog.pg_extension_config_dump('quota_sched.held_change', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.borrow_memory', '');

/* ---------------------------------------------------------------------
 * Privileges (scheduling.md 8).  Nothing for PUBLIC.
 * ------------------------------------------------------------------- */

REVOKE ALL ON quota_sched.service_environment, quota_sched.job_queue, quota_sched.quota_share,
	quota_sched.job, quota_sched.job_event, quota_sched.pass_log, quota_sched.held_capacity,
	quota_sched.queue_status, quota_sched.config_event, quota_sched.usage_hourly,
	quota_sched.usage_rollup, quota_sched.usage_totals, quota_sched.lending_hourly,
	quota_sched.agent, quota_sched.held_change, quota_sched.borrow_memory,
	quota_sched.host_held, quota_sched.host_held_change, quota_sched.agent_change,
	quota_sched.constrained_change, quota_sched.job_preemption, quota_sched.share_change
	FROM PUBLIC;
REVOKE ALL ON SEQUENCE quota_sched.job_id_seq, quota_sched.job_event_id_seq,
	quota_sched.pass_log_id_seq, quota_sched.config_event_id_seq,
	quota_sched.host_held_change_seq, quota_sched.agent_change_seq,
	quota_sched.constrained_change_seq, quota_sched.share_change_seq FROM PUBLIC;

/* Configuration: admins write it, everybody reads it. */
GRANT SELECT ON quota_sched.service_environment, quota_sched.job_queue, quota_sched.quota_share
	TO quota_sched_admin, quota_sched_agent, quota_sched_user;
GRANT INSERT, UPDATE, DELETE ON quota_sched.service_environment, quota_sched.job_queue,
	quota_sched.quota_share TO quota_sched_admin;

/*
 * Jobs.  Submitters may name any column in INSERT so that the job
 * triggers, not a bare "permission denied", tell them which column they
 * may not set: the triggers refuse every system column on INSERT and every
 * change but priority on UPDATE, for every role.  For the same reason
 * users and admins have UPDATE on the submitter's columns (0.3): an UPDATE
 * of instance_count reaches job_before_update, which refuses it (42501)
 * saying that only priority may change, where "permission denied for
 * table job" said nothing of it.  Only priority ever changes; the system's
 * columns keep no UPDATE privilege at all.  The privileges are the
 * columns', not the table's.  With UPDATE on the table, any team member could LOCK TABLE
 * quota_sched.job IN ACCESS EXCLUSIVE MODE and stall every queue; LOCK
 * TABLE beyond ROW EXCLUSIVE needs a table privilege.  Admins may delete
 * jobs that have ended (job_before_delete) and old passes (prune).
 */
GRANT SELECT, INSERT ON quota_sched.job TO quota_sched_admin, quota_sched_user;
GRANT SELECT ON quota_sched.job TO quota_sched_agent;
GRANT UPDATE (name, job_queue, quota_share, priority, capacity_unit, instance_count, payload,
	max_attempts, preemption_retries, timeout, client_token, tags, max_lease_losses,
	instances_per_host, same_label)
	ON quota_sched.job TO quota_sched_admin, quota_sched_user;
GRANT SELECT ON quota_sched.job_event, quota_sched.pass_log
	TO quota_sched_admin, quota_sched_agent, quota_sched_user;
GRANT DELETE ON quota_sched.job, quota_sched.pass_log TO quota_sched_admin;

/* What only the system writes, admins read. */
GRANT SELECT ON quota_sched.queue_status, quota_sched.config_event, quota_sched.usage_hourly,
	quota_sched.usage_rollup, quota_sched.usage_totals, quota_sched.lending_hourly,
	quota_sched.agent, quota_sched.held_change, quota_sched.borrow_memory TO quota_sched_admin;

/*
 * job_attempt (issue 21, a job's own output): admins and users read it
 * (row-level security, policies.sql, keeps a user to the rows of the jobs
 * they see); only the agents' functions write it.
 */
REVOKE ALL ON quota_sched.job_attempt FROM PUBLIC;
GRANT SELECT ON quota_sched.job_attempt TO quota_sched_admin, quota_sched_user;

/*
 * words.sql
 *		The words of each kind that columns hold, one DOMAIN per kind: the
 *		one home in SQL of the words the policy core defines in
 *		src/core/words.h (the domain has the name of the core's kind).
 *
 * Every column of a kind is checked against its domain by a CHECK of its
 * table (tables.sql), named TABLE_word_COLUMN, that casts the column to
 * the domain: so the list of words is written once here, and a column's
 * type stays text (the views, functions and clients that read it see no
 * change).  The configuration tables keep the CHECKs that name the row in
 * their messages (check_state, check_strategy, check_choice: their names
 * sort before TABLE_word_..., so they speak first).
 *
 * The pg_regress scenario core_words compares each domain's words with
 * the core's (quota_sched.core_words()): a word added to one side only
 * fails it.  Run by the install script only; an update adds a word with
 * ALTER DOMAIN (sql/updates/).
 */

/* job.state, job_event.from_state and to_state (scheduling.md 4) */
CREATE DOMAIN quota_sched.job_state AS text
	CONSTRAINT job_state_check
	CHECK (VALUE IN ('RUNNABLE', 'SCHEDULED', 'STARTING', 'RUNNING', 'SUCCEEDED', 'FAILED',
					 'SUBMITTED', 'PENDING'));

/* job.stop_reason (null: no stop pending) */
CREATE DOMAIN quota_sched.stop_reason AS text
	CONSTRAINT stop_reason_check
	CHECK (VALUE IN ('CROSS_SHARE_PREEMPTION', 'IN_SHARE_PREEMPTION', 'CAPACITY_REDUCED',
					 'TIMEOUT', 'TERMINATED', 'PEER_FAILED', 'PEER_LOST', 'PEER_RELEASED'));

/* job_event.kind */
CREATE DOMAIN quota_sched.event_kind AS text
	CONSTRAINT event_kind_check
	CHECK (VALUE IN ('STATE', 'STOP', 'TERMINATE', 'PRIORITY', 'PROMISE', 'PROMISE_LAPSED'));

/* quota_share.strategy */
CREATE DOMAIN quota_sched.strategy AS text
	CONSTRAINT strategy_check CHECK (VALUE IN ('RESERVE', 'LEND', 'LEND_AND_BORROW'));

/* quota_share.queueing */
CREATE DOMAIN quota_sched.queueing AS text
	CONSTRAINT queueing_check CHECK (VALUE IN ('BEST_EFFORT', 'STRICT'));

/* job_queue.borrow_order */
CREATE DOMAIN quota_sched.borrow_order AS text
	CONSTRAINT borrow_order_check CHECK (VALUE IN ('FIFO', 'FAIR'));

/* quota_share.budget_period */
CREATE DOMAIN quota_sched.budget_period AS text
	CONSTRAINT budget_period_check CHECK (VALUE IN ('DAY', 'WEEK', 'MONTH'));

/* service_environment.state, job_queue.state, quota_share.state */
CREATE DOMAIN quota_sched.config_state AS text
	CONSTRAINT config_state_check CHECK (VALUE IN ('ENABLED', 'DISABLED'));

/* agent.state */
CREATE DOMAIN quota_sched.agent_state AS text
	CONSTRAINT agent_state_check CHECK (VALUE IN ('ACTIVE', 'DRAINING'));

/* job_part.state (scheduling.md 3.14) */
CREATE DOMAIN quota_sched.part_state AS text
	CONSTRAINT part_state_check CHECK (VALUE IN ('PLACED', 'CLAIMED', 'RUNNING', 'ENDED'));

/* job_part.ended_as: how a part ended (scheduling.md 3.14) */
CREATE DOMAIN quota_sched.part_end AS text
	CONSTRAINT part_end_check
	CHECK (VALUE IN ('SUCCEEDED', 'FAILED', 'STOPPED', 'RELEASED', 'LOST', 'DROPPED'));

/*
 * validation.sql
 *		The functions that the tables' CHECK constraints and indexes call.
 *
 * A function source: the install script runs it before it creates the
 * tables, and every update script runs it again (CREATE OR REPLACE), so
 * this is the one text of these functions.
 */

/* ---------------------------------------------------------------------
 * Check functions used by CHECK constraints.  Each returns true or raises
 * check_violation with a message naming the object and the bad value
 * (src/checks.c).  The CHECKs of the configuration tables run as whoever
 * writes them: admins.
 * ------------------------------------------------------------------- */

CREATE OR REPLACE FUNCTION quota_sched.check_name(value text, what text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'qs_check_name'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE OR REPLACE FUNCTION quota_sched.check_capacity_map(value jsonb, what text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'qs_check_capacity_map'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

/* a share's budget: a capacity map whose values take fractions (0.4) */
CREATE OR REPLACE FUNCTION quota_sched.check_budget(value jsonb, what text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'qs_check_budget'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE OR REPLACE FUNCTION quota_sched.check_state(value text, what text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'qs_check_state'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE OR REPLACE FUNCTION quota_sched.check_strategy(strategy text, borrow_limit integer, what text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'qs_check_strategy'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE OR REPLACE FUNCTION quota_sched.check_runnable_timeout(value interval, what text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'qs_check_runnable_timeout'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE OR REPLACE FUNCTION quota_sched.check_claim_timeout(value interval, what text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'qs_check_claim_timeout'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE OR REPLACE FUNCTION quota_sched.check_fence_grace(value interval, what text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'qs_check_fence_grace'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

/* a queue's borrow_order, a share's queueing */
CREATE OR REPLACE FUNCTION quota_sched.check_choice(value text, column_name text, what text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'qs_check_choice'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE OR REPLACE FUNCTION quota_sched.check_lend_limit(strategy text, lend_limit integer, what text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'qs_check_lend_limit'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE OR REPLACE FUNCTION quota_sched.check_min_runtime(value interval, what text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'qs_check_min_runtime'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE OR REPLACE FUNCTION quota_sched.check_weight(weight integer, what text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'qs_check_weight'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

/* a queue's fair_half_life, with its borrow_order: not STRICT (null is none) */
CREATE OR REPLACE FUNCTION quota_sched.check_fair_half_life(value interval, borrow_order text,
	what text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'qs_check_fair_half_life'
LANGUAGE C IMMUTABLE PARALLEL SAFE;

/*
 * an agent's labels and address (doc/agents.md, "Labels and address";
 * src/agents/host_checks.c, which agent_ready calls too).  Not granted: only the agents' functions
 * write the table, as its owner.
 */
CREATE OR REPLACE FUNCTION quota_sched.check_agent_labels(labels jsonb, agent text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'qs_check_agent_labels'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE OR REPLACE FUNCTION quota_sched.check_agent_address(address text, agent text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'qs_check_agent_address'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

REVOKE ALL ON FUNCTION quota_sched.check_name(text, text),
	quota_sched.check_capacity_map(jsonb, text),
	quota_sched.check_budget(jsonb, text),
	quota_sched.check_state(text, text),
	quota_sched.check_strategy(text, integer, text),
	quota_sched.check_runnable_timeout(interval, text),
	quota_sched.check_claim_timeout(interval, text),
	quota_sched.check_fence_grace(interval, text),
	quota_sched.check_choice(text, text, text),
	quota_sched.check_lend_limit(text, integer, text),
	quota_sched.check_min_runtime(interval, text),
	quota_sched.check_weight(integer, text),
	quota_sched.check_fair_half_life(interval, text, text),
	quota_sched.check_agent_labels(jsonb, text),
	quota_sched.check_agent_address(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION quota_sched.check_name(text, text),
	quota_sched.check_capacity_map(jsonb, text),
	quota_sched.check_budget(jsonb, text),
	quota_sched.check_state(text, text),
	quota_sched.check_strategy(text, integer, text),
	quota_sched.check_runnable_timeout(interval, text),
	quota_sched.check_claim_timeout(interval, text),
	quota_sched.check_fence_grace(interval, text),
	quota_sched.check_choice(text, text, text),
	quota_sched.check_lend_limit(text, integer, text),
	quota_sched.check_min_runtime(interval, text),
	quota_sched.check_weight(integer, text),
	quota_sched.check_fair_half_life(interval, text, text) TO quota_sched_admin;

/*
 * in_transaction_block: whether the statement runs inside a transaction
 * block, where a procedure cannot COMMIT (prune() refuses to start there,
 * 25001, src/checks.c).
 */
CREATE OR REPLACE FUNCTION quota_sched.in_transaction_block()
RETURNS boolean
AS 'MODULE_PATHNAME', 'qs_in_transaction_block'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

REVOKE ALL ON FUNCTION quota_sched.in_transaction_block() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION quota_sched.in_transaction_block() TO quota_sched_admin;

/*
 * The end of an attempt with a timeout: started_at + timeout, days and
 * months counted in UTC (so that it can be indexed: job_deadline).  Index
 * maintenance evaluates it as whoever writes the job.
 */
CREATE OR REPLACE FUNCTION quota_sched.attempt_deadline(started_at timestamptz, timeout interval)
RETURNS timestamptz
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN ((started_at AT TIME ZONE 'UTC') + timeout) AT TIME ZONE 'UTC';

REVOKE ALL ON FUNCTION quota_sched.attempt_deadline(timestamptz, interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION quota_sched.attempt_deadline(timestamptz, interval)
	TO quota_sched_admin, quota_sched_agent, quota_sched_user;

/*
 * core_words(): every word of the policy core (src/core/words.h), kind by
 * kind, as its tables of names have them; the pg_regress scenario
 * core_words compares those of the kinds that columns hold with the
 * domains of sql/words.sql.  It shows nothing but the code's own tables.
 */
CREATE OR REPLACE FUNCTION quota_sched.core_words()
RETURNS TABLE (kind text, word text)
AS 'MODULE_PATHNAME', 'qs_core_words'
LANGUAGE C STABLE STRICT PARALLEL SAFE ROWS 100;

REVOKE ALL ON FUNCTION quota_sched.core_words() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION quota_sched.core_words()
	TO quota_sched_admin, quota_sched_agent, quota_sched_user;

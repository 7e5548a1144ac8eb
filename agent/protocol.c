/*-------------------------------------------------------------------------
 *
 * protocol.c
 *		quota-sched-agent's side of the launcher protocol: claim jobs for
 *		its free instances, heartbeat (leases renewed, stops, and
 *		reconciliation), and tell the database how each job ended.
 *
 * What it does always comes from claim and heartbeat; a notification is
 * only a wake-up.  What could not be told while the database could not be
 * reached is told after the reconnection.
 *
 *-------------------------------------------------------------------------
 */
#include "db.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "wake.h"

double		next_heartbeat = 0;

/* after an agent-side fault, no claim before then (monotonic s) */
static double claims_paused_until = 0;
static double fault_backoff = 0;	/* the last pause, s; 0: none */

/*
 * agent_fault: a job could not be started for a fault of the agent's (its
 * checkpoint directory, a fork): the job is released, and the agent claims
 * nothing for 1 s, doubling to 60 s while the faults go on, so that a
 * broken host does not claim and release the queue's jobs over and over.
 */
void
agent_fault(void)
{
	fault_backoff = fault_backoff == 0 ? 1 : fault_backoff * 2 > 60 ? 60 : fault_backoff * 2;
	claims_paused_until = now_mono() + fault_backoff;
	db_stop_taking();
	log_event("warning", "claims_paused", NULL,
			  "a job could not be started for a fault of the agent's: no claim for %g s", fault_backoff);
}

/* agent_fault_cleared: a job started: the next fault pauses the claims 1 s again */
void
agent_fault_cleared(void)
{
	fault_backoff = 0;
}

/* what became of telling the database a job's end (tell_database) */
typedef enum Told
{
	TOLD_DONE,					/* told, or refused: the job is forgotten */
	TOLD_RETRY,					/* to be tried again (retry_at) */
	TOLD_LOST					/* the connection is lost: told after it */
} Told;

/*
 * refused tells whether the database's error about a report or release
 * says the job is not this agent's to act on (any more): no such job,
 * another login's, not held by this agent, a bad argument.  Any other
 * error (a row locked by a user's transaction, a deadlock, a cancelled
 * statement, ...) may pass: the agent tries again.
 */
static bool
refused(const char *sqlstate)
{
	return strcmp(sqlstate, "02000") == 0 || strcmp(sqlstate, "42501") == 0 ||
		strcmp(sqlstate, "55000") == 0 || strcmp(sqlstate, "22023") == 0;
}

/*
 * The arguments of a job's report (state, reason, exit code) or release,
 * with the last of the attempt's output (attempt_tail; none if it took no
 * output, or from the third try on, in case it is what the server will not
 * take).
 */
typedef struct Telling
{
	StatementId id;				/* STMT_REPORT or STMT_RELEASE */
	const char *params[7];
	char		code[16];
	char		output[OUTPUT_TAIL_BYTES + 1];
} Telling;

/*
 * action_of fills *a with what the job's end tells.  The reason is made
 * valid UTF-8 first, or the server would refuse it all.
 */
static void
action_of(Job *job, Telling *a)
{
	const char *out = NULL;

	make_valid_utf8(job->reason);
	if (job->log.opened && job->tries < 3)
	{
		attempt_tail(job, a->output, sizeof(a->output));
		out = a->output;
	}
	memset(a->params, 0, sizeof(a->params));
	a->params[0] = job->id_text;
	a->params[1] = opts.agent;
	if (job->action == ACT_REPORT)
	{
		a->id = STMT_REPORT;
		a->params[2] = job->state;
		a->params[3] = job->reason[0] ? job->reason : NULL;
		a->params[4] = job->attempt_text;
		if (job->has_exit_code)
		{
			snprintf(a->code, sizeof(a->code), "%d", job->exit_code);
			a->params[5] = a->code;
		}
		a->params[6] = out;
	}
	else
	{
		a->id = STMT_RELEASE;
		a->params[2] = job->reason;
		a->params[3] = out;
	}
}

/*
 * tell_attempt tells the database where the job's attempt runs
 * (attempt_started): this host, the file of its output, the external
 * launcher's handle once known, rank 0's rendezvous port, the devices it
 * was given (--devices); each made printable for the server.
 * False if the connection is lost (told after the reconnection); any
 * other failure is logged and not tried again: it is no reason to hold
 * back the job's end.
 */
static bool
tell_attempt(Job *job)
{
	char		host[sizeof(opts.host)];
	char		path[PATH_MAX];
	char		handle[1024];
	char		port[16];
	char		devices[sizeof(job->devices) + 2];
	const char *params[8] = {job->id_text, opts.agent, job->attempt_text, NULL, NULL, NULL,
	NULL, NULL};
	PGresult   *res;
	int			rc;

	job->tell_attempt = false;
	/* rank 0's port (a part of another rank gives none) */
	snprintf(port, sizeof(port), "%d", job->rdv.port);
	params[6] = job->rdv.known && job->rdv.rank == 0 && job->rdv.port > 0 ? port : NULL;
	printable_copy(opts.host, host, sizeof(host));
	printable_copy(job->log.path, path, sizeof(path));
	printable_copy(job->handle, handle, sizeof(handle));
	params[3] = host[0] ? host : NULL;
	params[4] = path[0] ? path : NULL;
	params[5] = handle[0] ? handle : NULL;
	/* the devices' names are of letters, digits, '-' and '/': an array literal as they are */
	snprintf(devices, sizeof(devices), "{%s}", job->devices);
	params[7] = job->devices[0] ? devices : NULL;
	rc = db_exec(STMT_ATTEMPT, params, &res, job);
	if (rc == DB_LOST)
	{
		job->tell_attempt = true;
		return false;
	}
	if (rc == DB_OK)
		PQclear(res);
	return true;
}

/*
 * Whether a claim was put off (no room, shutting down, paused) or failed,
 * or ran with some of the agent's instances busy, so that it may have
 * passed over a job that needs them, or left jobs behind (claim_left()):
 * the report that frees them claims again (told).
 */
static bool claim_deferred = false;

/*
 * claim_follows_report: whether the agent claims right after a report that
 * frees instances: without agent_wait (notifications are not kept), or
 * when a claim was put off or may have passed over a job (claim_deferred).
 */
static bool
claim_follows_report(void)
{
	return !wake_waits() || claim_deferred;
}

/*
 * told logs what the database took (res: the job's state now); a job that
 * has ended for good loses its checkpoint directory.
 */
static void
told(Job *job, PGresult *res)
{
	const char *state = PQntuples(res) > 0 ? PQgetvalue(res, 0, 0) : "";

	if (job->action == ACT_REPORT)
	{
		/*
		 * Its instances are free: claim now.  A job dispatched while they
		 * were busy had its notification then, and may send none again.
		 * With agent_wait, only if a claim was put off or may have passed
		 * over a job for want of room (claim_deferred): what a claim left
		 * behind, and what was dispatched since, is pending for the next
		 * wait (do_claim).
		 */
		want_claim = want_claim || claim_follows_report();
		log_event("info", "job_reported", job, "reported %s%s%s; the job is now %s",
				  job->state, job->reason[0] ? ": " : "", job->reason, state);
		jobs_done++;
	}
	else
		log_event("info", "job_released", job, "released (%s); the job is now %s",
				  job->reason, state);
	if (strcmp(state, "SUCCEEDED") == 0 || strcmp(state, "FAILED") == 0)
		remove_checkpoint_dir(job);
	PQclear(res);
}

/*
 * retry_later: the report or release failed, not refused.  Keep the job
 * (the heartbeat then neither releases it nor lets its lease run out) and
 * try again, after 1, 2, ... up to 10 s; from the third try without its
 * reason, in case the reason is what the server will not take.  While the
 * database waits for ALTER EXTENSION quota_sched UPDATE
 * (SQLSTATE_SCHEMA_VERSION), every 5 s, and the try is not counted: the
 * report keeps its reason and output.
 */
static void
retry_later(Job *job)
{
	if (strcmp(last_sqlstate, SQLSTATE_SCHEMA_VERSION) == 0)
	{
		job->retry_at = now_mono() + 5;
		log_event("warning", "job_retry", job,
				  "the %s waits for the database's update (SQLSTATE %s): trying again in 5 s",
				  job->action == ACT_REPORT ? "report" : "release", last_sqlstate);
		return;
	}
	job->tries++;
	if (job->tries >= 3)
		job->reason[0] = '\0';
	job->retry_at = now_mono() + (job->tries < 10 ? job->tries : 10);
	log_event("warning", "job_retry", job, "the %s failed (SQLSTATE %s): trying again in %d s",
			  job->action == ACT_REPORT ? "report" : "release", last_sqlstate,
			  job->tries < 10 ? job->tries : 10);
}

/*
 * answered does what the database answered to the job's report or release
 * (rc: db_exec's; res: its result if DB_OK, cleared here).
 */
static Told
answered(Job *job, int rc, PGresult *res)
{
	if (rc == DB_LOST)
		return TOLD_LOST;
	if (rc == DB_OK)
		told(job, res);
	else if (!refused(last_sqlstate))
	{
		retry_later(job);
		return TOLD_RETRY;
	}
	else
		log_event("warning", "job_forgotten", job,
				  "the database refused the %s: the job is no longer this agent's",
				  job->action == ACT_REPORT ? "report" : "release");
	return TOLD_DONE;
}

/* tell_database tells the database the job's end (a report or a release) */
static Told
tell_database(Job *job)
{
	Telling		a;
	PGresult   *res = NULL;
	int			rc;

	action_of(job, &a);
	rc = db_exec(a.id, a.params, &res, job);
	return answered(job, rc, res);
}

/*
 * flush_keeping tells the database where the jobs' attempts run (those
 * that started, or got their handle, since), then what became of the jobs
 * whose attempts ended (those due: a failed try waits for its retry_at),
 * and forgets them; but, with keep, the first report due is left for the
 * caller, in *keep, to tell with its claim (claim_with_report; not with
 * --no-listen, which prepares no statement: a pooler).
 */
static void
flush_keeping(Job **keep)
{
	int			i;

	for (i = 0; i < njobs && conn != NULL; i++)
	{
		Job		   *job = jobs[i];
		Told		result;

		if (job->tell_attempt && job->action != ACT_DROP && job->stop != STOP_LOST &&
			!tell_attempt(job))
			return;				/* told after the reconnection */
		if (job->action == ACT_NONE || job->retry_at > now_mono())
			continue;
		if (keep && *keep == NULL && job->action == ACT_REPORT && opts.listen)
		{
			*keep = job;
			continue;
		}
		if (job->action == ACT_DROP)
			log_event("info", "job_dropped", job, "no longer held by this agent; nothing reported");
		else if ((result = tell_database(job)) == TOLD_LOST)
			return;				/* told after the reconnection */
		else if (result == TOLD_RETRY)
			continue;
		remove_job(job);
		i--;
	}
}

/* flush_actions tells the database all that is due (flush_keeping) */
void
flush_actions(void)
{
	flush_keeping(NULL);
}

/*
 * flush_or_claim tells the database all that is due, but for a report
 * after which the agent would claim (told(): without agent_wait, or a
 * claim deferred; not when it takes nothing): that one is left for the
 * claim's transaction, and the claim asked for now (do_claim).
 */
void
flush_or_claim(void)
{
	Job		   *kept = NULL;

	flush_keeping(claim_follows_report() && may_take() ? &kept : NULL);
	want_claim = want_claim || kept != NULL;
}

/*
 * release_unknown releases a job the database says this agent holds but
 * that it does not run (the agent was restarted, say): no attempt counted.
 */
static void
release_unknown(const char *id_text)
{
	/* no output: the agent has run nothing of it (STMT_RELEASE has 4) */
	const char *params[4] = {id_text, opts.agent, NULL, NULL};
	char		reason[200];
	PGresult   *res;

	snprintf(reason, sizeof(reason), "agent %s does not run it (restarted?)", opts.agent);
	params[2] = reason;
	if (db_exec(STMT_RELEASE, params, &res, NULL) == DB_OK)
	{
		log_event("info", "job_released", NULL,
				  "job %s: held by this agent in the database but not run here: released",
				  id_text);
		PQclear(res);
	}
}

/*
 * heartbeat_row takes row i of heartbeat()'s answer (t0: when it was
 * asked): the job's lease as the server counts it now, and its stop if one
 * is asked.  Returns the job's id if the database gives the agent a job
 * that it does not run, to be released; else NULL.
 */
static const char *
heartbeat_row(PGresult *res, int i, double t0)
{
	int64_t		id = strtoll(PQgetvalue(res, i, 0), NULL, 10);
	bool		stop = !PQgetisnull(res, i, 1);
	Job		   *job = find_job(id);

	if (job == NULL)
	{
		/*
		 * Released only once no attempt of it runs here: one being killed
		 * (its lease ran out while the database could not be reached, and
		 * this heartbeat renewed it) must be gone before the job may run
		 * elsewhere.  A later heartbeat releases it.
		 */
		return still_running(id) ? NULL : PQgetvalue(res, i, 0);
	}
	job->seen = true;

	/*
	 * the lease the job has now, as the server counts it: a job whose row
	 * another transaction held was not renewed
	 */
	job->lease_deadline = PQgetisnull(res, i, 2) ? t0 + opts.lease
		: t0 + strtod(PQgetvalue(res, i, 2), NULL);
	lease_renewed(job);
	if (stop && ((job->alive && job->stop == STOP_NONE) || job->rdv.waiting))
	{
		char		why[300];

		snprintf(why, sizeof(why), "stop requested (%s)", PQgetvalue(res, i, 1));
		if (job->rdv.waiting)
			end_wait(job, ACT_REPORT, why);
		else
			begin_stop(job, STOP_REQUESTED, why);
	}
	return NULL;
}

/*
 * do_heartbeat renews the leases of the jobs the agent holds, every
 * --heartbeat and when a stop is notified, and reconciles: a job asked to
 * stop is stopped, a job the agent runs that the database no longer gives
 * it is killed (STOP_LOST), a job the database gives it that it does not
 * run is released.  A claim follows.
 */
void
do_heartbeat(void)
{
	char		lease[32];
	const char *params[2] = {opts.agent, lease};
	PGresult   *res;
	double		t0 = now_mono();
	int			i,
				n;
	char	  **unknown;
	int			nunknown = 0;

	want_heartbeat = false;
	snprintf(lease, sizeof(lease), "%.3f seconds", opts.lease);
	if (db_exec(STMT_HEARTBEAT, params, &res, NULL) != DB_OK)
	{
		next_heartbeat = now_mono() + opts.heartbeat;
		return;
	}
	next_heartbeat = t0 + opts.heartbeat;
	for (i = 0; i < njobs; i++)
		jobs[i]->seen = false;
	n = PQntuples(res);
	unknown = calloc(n + 1, sizeof(char *));
	for (i = 0; i < n; i++)
	{
		const char *id_text = heartbeat_row(res, i, t0);

		if (id_text && unknown)
			unknown[nunknown++] = strdup(id_text);
	}
	PQclear(res);
	/* jobs it runs that the database no longer gives it */
	for (i = 0; i < njobs; i++)
		if (jobs[i]->alive && !jobs[i]->seen && jobs[i]->stop != STOP_LOST)
			begin_stop(jobs[i], STOP_LOST, "the database no longer gives this job to the agent");
		else if (jobs[i]->rdv.waiting && !jobs[i]->seen && jobs[i]->action == ACT_NONE)
			end_wait(jobs[i], ACT_DROP, "the database no longer gives this job to the agent");
	/* jobs the database gives it that it does not run */
	for (i = 0; i < nunknown; i++)
	{
		if (unknown[i] && conn)
			release_unknown(unknown[i]);
		free(unknown[i]);
	}
	free(unknown);
	want_claim = true;
}

/*
 * take_claimed puts row i of claim()'s answer (t0: when it was asked) into
 * the job table (holding, of a job on several hosts, its part's instances)
 * and has its launcher start it once its peers are known
 * (begin_rendezvous; --noop: reported at once).
 */
static void
take_claimed(PGresult *res, int i, double t0)
{
	Job		   *old = find_job(strtoll(PQgetvalue(res, i, 0), NULL, 10));
	Job		   *job;
	ClaimedJob	claimed = {
		.command_error = PQgetisnull(res, i, 3) ? NULL : PQgetvalue(res, i, 3),
		.argv_text = PQgetvalue(res, i, 4),
		.payload = PQgetvalue(res, i, 5),
	};

	/*
	 * Claimed again while an attempt of it is still here: that one was
	 * taken away (released by an admin, a lease that ran out) before a
	 * heartbeat said so.  It is killed and forgotten.
	 */
	if (old && old->alive)
		begin_stop(old, STOP_LOST, "claimed again: this attempt is no longer the agent's");
	else if (old)
		old->action = ACT_DROP;
	job = add_job(strtoll(PQgetvalue(res, i, 0), NULL, 10),
				  atoi(PQgetvalue(res, i, 2)),
				  atoi(PQgetvalue(res, i, 1)));

	job->job_instances = atoi(PQgetvalue(res, i, 6));
	job->array_index = PQgetisnull(res, i, 7) ? -1 : atoi(PQgetvalue(res, i, 7));
	job->lease_deadline = t0 + opts.lease;
	if (opts.pickup_log)
		fprintf(opts.pickup_log, "%" PRId64 " %lld\n", job->id, now_real_us());
	log_event("info", "job_claimed", job, "claimed %d instance(s)", job->instances);
	if (opts.noop)
		set_report(job, "SUCCEEDED", 0, true, NULL);
	else
		begin_rendezvous(job, &claimed);
}

/*
 * may_take: whether the agent takes new jobs now, by a claim or given at
 * their dispatch while it waits (wake.c): not while shutting down or
 * draining, after a fault (agent_fault), nor past --exit-after.
 */
bool
may_take(void)
{
	return !shutting_down && !draining && now_mono() >= claims_paused_until &&
		!(opts.exit_after > 0 && jobs_done + njobs >= opts.exit_after);
}

/* forget: the job is forgotten once its end is told or refused (TOLD_DONE) */
static void
forget(Job *job, Told result)
{
	if (result == TOLD_DONE)
		remove_job(job);
}

/*
 * claim_with_report claims (params: STMT_CLAIM's), and, with a report
 * (pair), tells it first in the claim's transaction and round trip
 * (db_exec_pair): a job's end and the claim of the next, one commit.  A
 * report that fails is answered as alone, and the claim then runs alone.
 * A claim that fails with it takes the report with it (neither took
 * effect): the report stays due, told alone by the flush that follows
 * every claim (loop_step), or after the reconnection.  db_exec's answer
 * for the claim, *res its result.
 */
static int
claim_with_report(Job *pair, const char *const *params, PGresult **res)
{
	Telling		a;
	const char *const *both[2] = {NULL, params};
	PGresult   *out[2];
	int			failed,
				rc;
	bool		asked;

	if (pair == NULL)
		return db_exec(STMT_CLAIM, params, res, NULL);
	action_of(pair, &a);
	both[0] = a.params;
	rc = db_exec_pair((StatementId[2]) {a.id, STMT_CLAIM}, both, out, &failed, pair);
	if (rc == DB_ERROR && failed == 0)
	{
		forget(pair, answered(pair, DB_ERROR, NULL));
		return db_exec(STMT_CLAIM, params, res, NULL);
	}
	if (rc != DB_OK)
		return rc;
	/* the report's answer asks for no claim: this one answers it */
	asked = want_claim;
	forget(pair, answered(pair, DB_OK, out[0]));
	want_claim = asked;
	*res = out[1];
	return DB_OK;
}

/*
 * do_claim claims jobs for the agent's free instances (at most --instances
 * held at once), on a dispatch's notification and at each heartbeat, again
 * and again while the claim gives jobs: a job that fails at once frees its
 * instances for the next.  Not while shutting down, nor past --exit-after.
 * With agent_wait, again only while the claim left jobs behind for want of
 * room (claim_left(), read with the claim): one that left nothing asks for
 * no claim that would find nothing, and what is dispatched later wakes the
 * agent's wait.  A report due is told in the claim's transaction
 * (claim_with_report).
 */
void
do_claim(void)
{
	char		lease[32];
	char		free_text[16];
	Job		   *pair = NULL;

	want_claim = false;
	snprintf(lease, sizeof(lease), "%.3f seconds", opts.lease);
	/*
	 * what is to be told first: a part that waited and was told to let go
	 * (end_wait) is reported before the job may be claimed again here
	 * (one report kept for the claim's transaction, before the claim)
	 */
	flush_keeping(&pair);
	for (;;)
	{
		const char *params[5] = {opts.agent, opts.queue, opts.unit, free_text, lease};
		int			free_instances = (int) (opts.instances - busy_instances());
		PGresult   *res;
		int			i,
					n;
		bool		left;
		double		t0 = now_mono();

		if (free_instances <= 0 || !may_take())
		{
			claim_deferred = true;
			flush_actions();
			return;
		}
		claim_deferred = free_instances < opts.instances;
		snprintf(free_text, sizeof(free_text), "%d", free_instances);
		/*
		 * What asked for a claim before this one (a report of the last
		 * round's job, told() in its flush) is answered by it; a dispatch's
		 * notification that comes while it runs asks again.
		 */
		want_claim = false;
		if (claim_with_report(pair, params, &res) != DB_OK)
		{
			claim_deferred = true;
			return;
		}
		n = PQntuples(res);
		left = n > 0 && strcmp(PQgetvalue(res, 0, 8), "t") == 0;
		claim_deferred = claim_deferred || left;
		for (i = 0; i < n; i++)
			take_claimed(res, i, t0);
		PQclear(res);
		pair = NULL;
		if (n == 0 || (wake_waits() && !left))
		{
			flush_actions();
			return;
		}
		flush_keeping(&pair);
	}
}

/*
 * do_ready tells the database what the agent can run (agent_ready: its
 * queue, unit and instances, no bound with an external launcher, which
 * provisions each job; its labels and address), after every connection:
 * the scheduler then knows the agent, and dispatches to its queue nothing
 * larger than the largest live agent could take.  Without
 * --capacity-unit it registers nothing (it takes jobs of any unit).
 */
void
do_ready(void)
{
	char		instances[16];
	const char *params[6] = {opts.agent, opts.queue, opts.unit,
	opts.start_cmd ? NULL : instances, opts.labels, opts.address};
	PGresult   *res;
	int			rc;

	want_ready = false;
	if (opts.unit == NULL)
		return;
	snprintf(instances, sizeof(instances), "%ld", opts.instances);
	rc = db_exec(STMT_READY, params, &res, NULL);
	if (rc == DB_OK)
	{
		log_event("info", "agent_ready", NULL,
				  "registered for queue %s, unit %s, %s instance(s), labels %s, address %s",
				  opts.queue, opts.unit, params[3] ? instances : "any number of", opts.labels,
				  opts.address ? opts.address : opts.agent);
		PQclear(res);
	}
}

/*-------------------------------------------------------------------------
 *
 * wake.c
 *		How quota-sched-agent learns of its work between statements: a call
 *		of agent_wait kept running on its connection while it has nothing
 *		to do, where the server has it; else LISTEN (doc/agents.md
 *		"Waiting without LISTEN").
 *
 * PostgreSQL 15 wakes every listening session of the database at each
 * commit that notifies; agent_wait wakes only the agent concerned.  While
 * the agent's loop sleeps, a CALL of agent_wait runs (sent without
 * waiting for it); it returns what woke the agent ('dispatch', 'stop',
 * 'peers'), which the loop then does (a claim, a heartbeat, job_peers), or
 * nothing at its timeout: before the loop's next deadline, and within the
 * session's statement_timeout.  When the loop needs the connection before
 * (a job ended: its report), the agent sends a cancel request, which ends
 * the wait without an error, and reads its result: wake_end, before every
 * statement.  Not with --no-listen (a transaction-mode pooler would hold a
 * server session for the wait), nor with --wake listen.  The connection is
 * db.c's, which LISTENs where this does not wait, and after a wait that
 * failed.
 *
 *-------------------------------------------------------------------------
 */
#include "util.h"

#include <string.h>

#include <libpq-fe.h>

#include "agent.h"
#include "wake.h"

static bool use_wait = false;	/* agent_wait, not LISTEN, on this connection */
static bool waiting = false;	/* a CALL of agent_wait runs */
static double wait_until = 0;	/* when it times out (now_mono) */

/* $4, the lease of the jobs given at their dispatch while it waits (null: none) */
static const char wait_sql[] = "CALL quota_sched.agent_wait($1, $2, $3, lease => $4::interval)";

/* apply does what a result of agent_wait says; false if it failed */
static bool
apply(PGresult *res)
{
	const char *woken;

	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
		return false;
	woken = PQgetvalue(res, 0, 0);
	if (strstr(woken, "dispatch"))
		want_claim = true;
	if (strstr(woken, "stop"))
		want_heartbeat = true;
	if (strstr(woken, "peers"))
		want_peers = true;
	return true;
}

/*
 * wake_setup, on a new connection: whether the agent waits with agent_wait
 * on it (where the server has it: a first call, which takes what is
 * pending); if not, it LISTENs (unless --no-listen).
 */
bool
wake_setup(PGconn *conn)
{
	const char *params[4] = {opts.agent, opts.queue, "0", NULL};
	PGresult   *res;

	use_wait = waiting = false;
	if (!opts.listen || !opts.wake_wait)
		return false;
	res = PQexecParams(conn, wait_sql, 4, NULL, params, NULL, NULL, 0);
	use_wait = apply(res);
	PQclear(res);
	return use_wait;
}

/* wake_mode: how the agent learns of its work, for its log */
const char *
wake_mode(void)
{
	return !opts.listen ? "not listening (--no-listen)" : use_wait ? "waiting with agent_wait" :
		"listening";
}

/*
 * wake_waits: whether the agent waits with agent_wait, which keeps what
 * woke it pending until it waits again; a claim that left jobs behind
 * keeps its dispatch pending too (doc/agents.md)
 */
bool
wake_waits(void)
{
	return use_wait;
}

/*
 * wake_start, as the loop sleeps for at most timeout_ms: sends a wait that
 * ends before then, and half a second within the session's
 * statement_timeout (limit_ms; a wait that was given jobs may take 0.4 s
 * more as it ends), unless one runs or there is too little
 * time.  While the agent takes new jobs (may_take), the wait takes those
 * the passes give it at their dispatch, with --lease: its next claim
 * returns them, with no write of its own (doc/agents.md).  False if it
 * could not be sent.
 */
bool
wake_start(PGconn *conn, int timeout_ms, int limit_ms)
{
	char		ms[16];
	char		lease[32];
	const char *params[4] = {opts.agent, opts.queue, ms, may_take() ? lease : NULL};

	if (!use_wait || waiting)
		return true;
	if (timeout_ms > limit_ms - 500)
		timeout_ms = limit_ms - 500;
	timeout_ms -= 20;			/* its result comes before the loop wakes */
	if (timeout_ms < 50)
		return true;
	snprintf(ms, sizeof(ms), "%d", timeout_ms);
	snprintf(lease, sizeof(lease), "%.3f seconds", opts.lease);
	if (!PQsendQueryParams(conn, wait_sql, 4, NULL, params, NULL, NULL, 0))
		return false;
	waiting = true;
	wait_until = now_mono() + timeout_ms / 1000.0;
	return true;
}

/*
 * finish reads the wait's results (blocking) and does what they say.
 * False if it did not end as agent_wait does: the agent then LISTENs (the
 * caller), and claims and heartbeats at once, in case it missed something.
 * A connection lost is the caller's to see.
 */
static bool
finish(PGconn *conn)
{
	PGresult   *res;
	bool		ok = true;
	char		msg[1024] = "";

	waiting = false;
	while ((res = PQgetResult(conn)) != NULL)
	{
		if (PQresultStatus(res) != PGRES_TUPLES_OK && ok)
		{
			ok = false;
			trimmed(PQresultErrorMessage(res), msg, sizeof(msg));	/* the first says why */
		}
		apply(res);
		PQclear(res);
	}
	/* the server's word as it ended the session, as it reads when idle (on_notice) */
	if (PQstatus(conn) == CONNECTION_BAD && msg[0] != '\0')
		log_event("info", "server_notice", NULL, "%s", msg);
	if (ok || PQstatus(conn) == CONNECTION_BAD)
		return true;
	log_event("warning", "wait_failed", NULL, "agent_wait failed: %s; listening instead",
			  PQerrorMessage(conn));
	use_wait = false;
	want_claim = want_heartbeat = true;
	return false;
}

/*
 * wake_input, once the connection's input was read: the wait's end, if it
 * came; false if it failed (as finish)
 */
bool
wake_input(PGconn *conn)
{
	if (!waiting || PQisBusy(conn))
		return true;			/* no wait, or it runs on */
	return finish(conn);
}

/*
 * wake_end, before a statement: ends the wait that runs (a cancel request
 * unless it is about to time out) and does what it returned; false if it
 * failed (as finish).
 */
bool
wake_end(PGconn *conn)
{
	PGcancel   *cancel;
	char		err[256];

	if (!waiting)
		return true;
	if (now_mono() < wait_until - 0.01 && (cancel = PQgetCancel(conn)) != NULL)
	{
		if (!PQcancel(cancel, err, sizeof(err)))
			log_event("warning", "cancel_failed", NULL, "could not end agent_wait: %s", err);
		PQfreeCancel(cancel);
	}
	return finish(conn);
}

/*
 * wake_lost: the connection is gone, and its wait with it.  Called before
 * the connection is closed, it first reads what came of the wait (the
 * server's word as it ended the session comes as the wait's result, not as
 * a notice: finish logs it).
 */
void
wake_lost(PGconn *conn)
{
	if (waiting && conn != NULL)
		finish(conn);
	waiting = use_wait = false;
}

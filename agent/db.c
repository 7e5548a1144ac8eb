/*-------------------------------------------------------------------------
 *
 * db.c
 *		quota-sched-agent's connection: connecting with backoff, LISTEN,
 *		and the statements of its protocol, each run in a transaction of its
 *		own (prepared once a connection where it can be).
 *
 * A connection found lost is closed here, and the loop (main.c) connects
 * again: at once, then after 1 s doubling to 5 s, each wait stretched by up
 * to a fifth at random.  The short ceiling bounds how long an agent stays
 * away after the database comes back (a failover under Patroni takes about
 * the leader key's ttl: a 30 s ceiling doubled a 15 s failover); the random
 * part keeps a fleet that lost the database at one moment from coming back
 * at one moment.
 *
 *-------------------------------------------------------------------------
 */
#include "db.h"

#include <stdlib.h>
#include <string.h>

#include "version.h"
#include "wake.h"

#define RECONNECT_MAX_SECONDS 5.0

/* A statement the agent runs: its name in the log, its text, its arguments. */
typedef struct Statement
{
	const char *name;
	const char *sql;
	int			nparams;
} Statement;

/*
 * The claim also checks each job's payload->'command' (a reason when it is
 * not a non-empty array of strings) and returns the argv as "LEN:BYTES"
 * pieces (split_argv), so that the agent parses no JSON.  Its second
 * column is what the agent holds of the job: of a job placed on several
 * hosts, the instances of its own part (scheduling.md 3.14); the job's
 * instance_count and its index in its array (null: in none) come last.
 */
static const Statement statements[NUM_STATEMENTS] = {
	[STMT_CLAIM] = {"claim",
		"SELECT c.id, coalesce(c.part_instances[array_position(c.part_agents, $1::text)],\n"
		"                      c.instance_count),\n"
		"       1 + c.failed_attempts + c.preemption_count + c.lease_losses,\n"
		"       CASE WHEN c.payload->'command' IS NULL\n"
		"            THEN 'the job has no command (payload->''command'' must be a JSON array of strings)'\n"
		"            WHEN jsonb_typeof(c.payload->'command') <> 'array'\n"
		"            THEN 'the job''s command is a JSON ' || jsonb_typeof(c.payload->'command')\n"
		"                 || ', not an array of strings'\n"
		"            WHEN a.n = 0 THEN 'the job''s command is an empty array'\n"
		"            WHEN a.bad IS NOT NULL\n"
		"            THEN format('element %s of the job''s command is a JSON %s, not a string',\n"
		"                        a.bad - 1, a.bad_type)\n"
		"       END,\n"
		"       a.argv, c.payload::text, c.instance_count, c.array_index,\n"
		"       quota_sched.claim_left()\n"
		"  FROM quota_sched.claim($1::text, $2::text, $3::text, max_jobs => $4::integer,\n"
		"                         lease => $5::interval, max_instances => $4::integer, start => true) c\n"
		"  LEFT JOIN LATERAL (\n"
		"       SELECT count(*) AS n,\n"
		"              min(e.ord) FILTER (WHERE jsonb_typeof(e.v) <> 'string') AS bad,\n"
		"              (array_agg(jsonb_typeof(e.v) ORDER BY e.ord)\n"
		"                 FILTER (WHERE jsonb_typeof(e.v) <> 'string'))[1] AS bad_type,\n"
		"              string_agg(octet_length(e.v #>> '{}')::text || ':' || (e.v #>> '{}'), ''\n"
		"                         ORDER BY e.ord) AS argv\n"
		"         FROM jsonb_array_elements(CASE WHEN jsonb_typeof(c.payload->'command') = 'array'\n"
		"                                        THEN c.payload->'command' ELSE '[]' END)\n"
		"              WITH ORDINALITY AS e(v, ord)) a ON true\n"
		" ORDER BY c.id",
	5},
	[STMT_REPORT] = {"report",
		"SELECT state FROM quota_sched.report($1::bigint, $2::text, $3::text, $4::text,"
		" $5::integer, $6::integer, $7::text)",
	7},
	[STMT_HEARTBEAT] = {"heartbeat",
		"SELECT job_id, stop_reason, extract(epoch FROM lease_until - clock_timestamp())::float8"
		"  FROM quota_sched.heartbeat($1::text, $2::interval)",
	2},
	[STMT_RELEASE] = {"release",
		"SELECT state FROM quota_sched.release($1::bigint, $2::text, $3::text, $4::text)",
	4},
	[STMT_ATTEMPT] = {"attempt_started",
		"SELECT 1 FROM quota_sched.attempt_started($1::bigint, $2::text, $3::integer,"
		" $4::text, $5::text, $6::text, port => $7::integer, devices => $8::text[])",
	8},
	[STMT_READY] = {"agent_ready",
		"SELECT 1 FROM quota_sched.agent_ready($1::text, $2::text, $3::text, $4::integer,"
		" $5::jsonb, $6::text)",
	6},
	[STMT_PEERS] = {"job_peers",
		"SELECT rank, peer_agent, address, instances, claimed, port, attempt"
		"  FROM quota_sched.job_peers($1::bigint, $2::text)",
	2},
};

PGconn	   *conn = NULL;
double		reconnect_at = 0;
char		last_sqlstate[6];
int			statement_timeout_ms = 1000;
static double backoff = 0;		/* seconds before the next try; 0: at once */
static char *env_password = NULL;	/* PGPASSWORD, taken out of the environment */

/*
 * The statements the agent runs again and again are prepared once a
 * connection (named qs_N, N their StatementId), so that the server parses
 * and plans the claim, report, heartbeat and release once, not at every
 * call.  Not with --no-listen: a transaction-mode pooler may send each
 * statement to another server session, which would not know the name.
 */
static bool prepared[NUM_STATEMENTS];

/*
 * dispatch_for_me: false when a dispatch notification's payload says the
 * job is of another queue, or its part is placed on another agent
 * (scheduling.md 5.1): a fleet's every agent hears every dispatch, and
 * would otherwise claim for each.  A payload is not trusted: one this
 * agent cannot read asks for a claim, and a forged one can only add
 * claims, never hide the real notification of a job placed here.
 */
static bool
dispatch_for_me(const char *payload)
{
	char		value[512];

	if (json_string_field(payload, "job_queue", value, sizeof(value)) == 1 &&
		strcmp(value, opts.queue) != 0)
		return false;
	return json_string_field(payload, "agent", value, sizeof(value)) != 1 ||
		strcmp(value, opts.agent) == 0;
}

/*
 * collect_notifies takes the notifications that came: a dispatch for this
 * agent asks for a claim, a stop for a heartbeat, a part claimed or a port
 * given for the parts that wait to ask job_peers (rendezvous.c).
 */
void
collect_notifies(void)
{
	PGnotify   *n;

	if (conn == NULL)
		return;
	while ((n = PQnotifies(conn)) != NULL)
	{
		/* wake-ups only: what is done is what the functions return */
		if (strcmp(n->relname, "quota_sched_dispatch") == 0)
			want_claim = want_claim || dispatch_for_me(n->extra);
		else if (strcmp(n->relname, "quota_sched_stop") == 0)
			want_heartbeat = true;
		else if (strcmp(n->relname, "quota_sched_peers") == 0)
			want_peers = true;
		PQfreemem(n);
	}
}

/* lose_connection closes a connection found broken; the loop reconnects */
void
lose_connection(const char *why)
{
	char		buf[1024];

	trimmed(why, buf, sizeof(buf));	/* why may be the connection's own message */
	wake_lost(conn);
	log_event("warning", "connection_lost", NULL, "%s; reconnecting", buf);
	PQfinish(conn);
	conn = NULL;
	reconnect_at = now_mono();	/* at once, then with backoff */
	backoff = 0;
}

/* statement_name: the name statement id is prepared under (qs_N) */
static const char *
statement_name(StatementId id)
{
	static char names[NUM_STATEMENTS][16];

	if (names[id][0] == '\0')
		snprintf(names[id], sizeof(names[id]), "qs_%d", (int) id);
	return names[id];
}

/*
 * prepare prepares statement id on the connection (named as in the
 * table), once a connection; false if the server refused it.
 */
static bool
prepare(StatementId id)
{
	PGresult   *res;

	if (prepared[id])
		return true;
	res = PQprepare(conn, statement_name(id), statements[id].sql, statements[id].nparams, NULL);
	prepared[id] = PQresultStatus(res) == PGRES_COMMAND_OK;
	PQclear(res);
	return prepared[id];
}

/*
 * run_statement sends the statement: prepared (and prepared first, once a
 * connection) unless --no-listen, else with its text.  Its result, or NULL.
 */
static PGresult *
run_statement(StatementId id, const char *const *params)
{
	const Statement *st = &statements[id];

	if (!opts.listen)
		return PQexecParams(conn, st->sql, st->nparams, NULL, params, NULL, NULL, 0);
	if (!prepare(id))
		return PQexecParams(conn, st->sql, st->nparams, NULL, params, NULL, NULL, 0);
	return PQexecPrepared(conn, statement_name(id), st->nparams, params, NULL, NULL, 0);
}

/*
 * db_end_wait ends the wait that runs on the connection, if any, and does
 * what it returned (wake_end; LISTEN if it failed), as db_exec does before
 * a statement.
 */
void
db_end_wait(void)
{
	if (conn != NULL && !wake_end(conn) && PQstatus(conn) == CONNECTION_OK)
		(void) listen_setup();
}

/*
 * db_stop_taking: the agent takes no new job from now on (it drains, shuts
 * down, or pauses after a fault): the wait that runs, which may be given
 * jobs at their dispatch (wake.c), ends now, before the agent says so, and
 * a heartbeat follows, which returns any job given before its end (the
 * agent releases it: it does not run it).
 */
void
db_stop_taking(void)
{
	db_end_wait();
	want_heartbeat = true;
}

/*
 * statement_failed logs why statement id did not run (res: its result, or
 * NULL), and keeps its SQLSTATE in last_sqlstate.  DB_LOST when the
 * connection is gone (or is to a server that cannot take writes any more),
 * and closed; else DB_ERROR.  res is cleared.
 */
static int
statement_failed(StatementId id, PGresult *res, const Job *job)
{
	const char *sqlstate = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	char		msg[1024];

	snprintf(last_sqlstate, sizeof(last_sqlstate), "%s", sqlstate ? sqlstate : "");
	trimmed(res ? PQresultErrorMessage(res) : PQerrorMessage(conn), msg, sizeof(msg));
	if (msg[0] == '\0')
		trimmed(PQerrorMessage(conn), msg, sizeof(msg));
	PQclear(res);
	if (PQstatus(conn) == CONNECTION_BAD ||
		strncmp(last_sqlstate, "08", 2) == 0 || strncmp(last_sqlstate, "57P", 3) == 0 ||
		strcmp(last_sqlstate, "25006") == 0)
	{
		lose_connection(msg);
		return DB_LOST;
	}
	log_event("error", "sql_error", job, "%s failed: %s (SQLSTATE %s)",
			  statements[id].name, msg, last_sqlstate);
	collect_notifies();
	return DB_ERROR;
}

/* succeeded: whether res is the result of a statement that ran */
static bool
succeeded(const PGresult *res)
{
	ExecStatusType st = PQresultStatus(res);

	return res != NULL && (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK);
}

/*
 * take_connection readies the connection for a statement: it ends the
 * wait that runs on it (LISTEN if the wait failed).  False if there is no
 * connection.
 */
static bool
take_connection(void)
{
	last_sqlstate[0] = '\0';
	if (conn != NULL && !wake_end(conn) && PQstatus(conn) == CONNECTION_OK && !listen_setup())
		return false;
	return conn != NULL;
}

/*
 * db_exec runs one statement in its own transaction.  DB_OK with *out set
 * (the caller clears it); DB_ERROR: the statement failed (last_sqlstate),
 * already logged; DB_LOST: the connection is gone (or is to a server that
 * cannot take writes any more), and is closed.
 */
int
db_exec(StatementId id, const char *const *params, PGresult **out, const Job *job)
{
	PGresult   *res;

	*out = NULL;
	if (!take_connection())
		return DB_LOST;
	res = run_statement(id, params);
	if (!succeeded(res))
		return statement_failed(id, res, job);
	*out = res;
	collect_notifies();
	return DB_OK;
}

/*
 * pipeline_result: the result of the next statement of the pipeline (NULL
 * if the connection broke), with the end of its results read.
 */
static PGresult *
pipeline_result(void)
{
	PGresult   *res = PQgetResult(conn);
	PGresult   *extra;

	/* a statement's results end with a NULL; a broken connection may give none */
	while (res != NULL && PQstatus(conn) == CONNECTION_OK && (extra = PQgetResult(conn)) != NULL)
		PQclear(extra);
	return res;
}

/*
 * db_exec_pair runs two prepared statements (ids[0], then ids[1]) in one
 * transaction and one round trip: libpq's pipeline mode, both sent before
 * one Sync, at which the server commits both or neither.  DB_OK with both
 * results in out (the caller clears them); DB_ERROR: statement *failed (0
 * or 1) failed, logged as db_exec does, and neither took effect (the
 * other's result, if any, is cleared); DB_LOST as db_exec.  Only with
 * prepared statements (not --no-listen: a transaction-mode pooler).
 */
int
db_exec_pair(const StatementId ids[2], const char *const *params[2], PGresult *out[2],
			 int *failed, const Job *job)
{
	PGresult   *res;
	bool		sent = true;

	out[0] = out[1] = NULL;
	*failed = 0;
	if (!take_connection())
		return DB_LOST;
	for (int i = 0; i < 2; i++)
		if (!prepare(ids[i]))
		{
			*failed = i;
			return statement_failed(ids[i], NULL, job);
		}
	if (!PQenterPipelineMode(conn))
		return statement_failed(ids[0], NULL, job);
	for (int i = 0; i < 2 && sent; i++)
		sent = PQsendQueryPrepared(conn, statement_name(ids[i]), statements[ids[i]].nparams,
								   params[i], NULL, NULL, 0) == 1;
	sent = sent && PQpipelineSync(conn) == 1;
	for (int i = 0; i < 2 && sent; i++)
		out[i] = pipeline_result();
	/* the Sync's own result, after which the pipeline may end */
	while (sent && PQstatus(conn) == CONNECTION_OK && (res = PQgetResult(conn)) != NULL)
	{
		bool		synced = PQresultStatus(res) == PGRES_PIPELINE_SYNC;

		PQclear(res);
		if (synced)
			break;
	}
	if (!PQexitPipelineMode(conn) && PQstatus(conn) == CONNECTION_OK)
	{
		/* results left unread: the connection is not trusted any more */
		PQclear(out[0]);
		PQclear(out[1]);
		out[0] = out[1] = NULL;
		lose_connection("a pipeline of two statements did not end");
		return DB_LOST;
	}
	*failed = succeeded(out[0]) ? 1 : 0;
	if (sent && succeeded(out[0]) && succeeded(out[1]))
	{
		collect_notifies();
		return DB_OK;
	}
	res = out[*failed];
	PQclear(out[1 - *failed]);
	out[0] = out[1] = NULL;
	return statement_failed(ids[*failed], res, job);
}

/* on_notice logs the server's notices and libpq's own (a FATAL before a disconnection) */
static void
on_notice(void *arg, const char *message)
{
	char		buf[1024];

	(void) arg;
	log_event("info", "server_notice", NULL, "%s", trimmed(message, buf, sizeof(buf)));
}

/*
 * listen_setup runs LISTEN on the new connection (not with --no-listen).
 * False if it failed: the connection is closed, and tried again after the
 * longest backoff.
 */
bool
listen_setup(void)
{
	const char *setup[] = {"LISTEN quota_sched_dispatch", "LISTEN quota_sched_stop",
	"LISTEN quota_sched_peers"};
	int			nsetup = opts.listen ? 3 : 0;
	char		msg[1024];
	int			i;

	for (i = 0; i < nsetup; i++)
	{
		PGresult   *res = PQexec(conn, setup[i]);

		if (PQresultStatus(res) != PGRES_COMMAND_OK)
		{
			trimmed(PQerrorMessage(conn), msg, sizeof(msg));
			PQclear(res);
			lose_connection(msg);
			backoff = RECONNECT_MAX_SECONDS;
			reconnect_at = now_mono() + backoff;
			return false;
		}
		PQclear(res);
	}
	return true;
}

/*
 * hide_password takes PGPASSWORD out of the agent's environment into a
 * private copy, which try_connect hands to libpq as the password keyword
 * (what libpq would have read from PGPASSWORD, at every connection).  The
 * variable's text is overwritten where it lies, for /proc/PID/environ shows
 * the environment the process started with, not environ.
 */
void
hide_password(void)
{
	char	   *value = getenv("PGPASSWORD");
	volatile char *p;

	if (value == NULL)
		return;
	env_password = strdup(value);
	if (env_password == NULL)
		fatal("out of memory");
	for (p = value; *p; p++)
		*p = '\0';
	unsetenv("PGPASSWORD");
}

/*
 * forget_password wipes the private copy of PGPASSWORD: in a child of the
 * agent that will not connect (a job's shim), so that the copy of the
 * agent's memory it runs in holds the password no more.
 */
void
forget_password(void)
{
	volatile char *p;

	if (env_password == NULL)
		return;
	for (p = env_password; *p; p++)
		*p = '\0';
	free(env_password);
	env_password = NULL;
}

/*
 * schema_is_ours tells whether the database has quota_sched in this
 * agent's version or a later one (which keeps the functions an older
 * agent calls: doc/releasing.md).  An older schema (the library is
 * installed but ALTER EXTENSION quota_sched UPDATE has not run yet), or
 * none, is said (once for each version found) and the connection closed:
 * the loop tries again after the longest backoff, so that the agent
 * starts working by itself once the database is updated.
 */
static bool
schema_is_ours(void)
{
	static char refused[64];
	PGresult   *res = PQexec(conn, "SELECT extversion FROM pg_catalog.pg_extension"
								 " WHERE extname = 'quota_sched'");
	char		found[64];
	char		msg[1024];

	if (PQresultStatus(res) != PGRES_TUPLES_OK)
	{
		trimmed(PQresultErrorMessage(res), msg, sizeof(msg));
		PQclear(res);
		lose_connection(msg);
		return false;
	}
	snprintf(found, sizeof(found), "%s", PQntuples(res) == 1 ? PQgetvalue(res, 0, 0) : "");
	PQclear(res);
	if (found[0] != '\0' && QsCompareVersions(found, AGENT_VERSION) >= 0)
	{
		refused[0] = '\0';
		return true;
	}
	if (strcmp(found[0] ? found : "-", refused) != 0)
	{
		if (found[0] == '\0')
			log_event("error", "schema_missing", NULL,
					  "quota_sched is not installed in database %s; trying again every %.0f s",
					  PQdb(conn), RECONNECT_MAX_SECONDS);
		else
			log_event("error", "schema_older", NULL,
					  "database %s has quota_sched %s, older than this agent (%s): run ALTER EXTENSION quota_sched UPDATE there; trying again every %.0f s",
					  PQdb(conn), found, AGENT_VERSION, RECONNECT_MAX_SECONDS);
		snprintf(refused, sizeof(refused), "%s", found[0] ? found : "-");
	}
	PQfinish(conn);
	conn = NULL;
	backoff = RECONNECT_MAX_SECONDS;
	reconnect_at = now_mono() + backoff;
	return false;
}

/*
 * try_connect connects (conn), or logs why not and sets when to try again
 * (the backoff doubles from 1 s to 5 s, see the top of the file).  Connected, it asks for a
 * heartbeat (to reconcile) and a claim at once.
 */
void
try_connect(void)
{
	/*
	 * A statement that waits longer than a third of the lease (a queue's
	 * lock held by a long transaction) is cancelled, so that the loop goes
	 * on: it reaps, kills and heartbeats in time.  PGOPTIONS is added; a
	 * connection string's own options replace both.
	 */
	char		timeout[1024];
	const char *env_options = getenv("PGOPTIONS");
	const char *keys[] = {"fallback_application_name", "connect_timeout", "keepalives",
		"keepalives_idle", "keepalives_interval", "keepalives_count", "options", "password",
	"dbname", NULL};

	/* the password from PGPASSWORD, before dbname: the connection string's wins */
	const char *vals[] = {"quota-sched-agent", "10", "1", "10", "5", "3", timeout, env_password,
	opts.conninfo, NULL};
	char		msg[1024];

	statement_timeout_ms = opts.lease * 1000 / 3 < 1000 ? 1000 :
		opts.lease * 1000 / 3 > 2e9 ? 2000000000 : (int) (opts.lease * 1000 / 3);
	snprintf(timeout, sizeof(timeout), "-c statement_timeout=%d %s", statement_timeout_ms,
			 env_options ? env_options : "");
	conn = PQconnectdbParams(keys, vals, 1);
	if (PQstatus(conn) != CONNECTION_OK)
	{
		backoff = backoff == 0 ? 1 : backoff * 2;
		if (backoff > RECONNECT_MAX_SECONDS)
			backoff = RECONNECT_MAX_SECONDS;
		reconnect_at = now_mono() + backoff * (1 + 0.2 * drand48());
		log_event("warning", "connect_failed", NULL, "%s; next try in %.0f s",
				  trimmed(PQerrorMessage(conn), msg, sizeof(msg)), backoff);
		PQfinish(conn);
		conn = NULL;
		return;
	}
	PQsetNoticeProcessor(conn, on_notice, NULL);
	memset(prepared, 0, sizeof(prepared));
	if (!wake_setup(conn) && !listen_setup())
		return;
	if (!schema_is_ours())
		return;
	backoff = 0;
	log_event("info", "connected", NULL, "connected to %s:%s as %s; %s",
			  PQhost(conn), PQport(conn), PQuser(conn),
			  wake_mode());
	/* say what it can run, reconcile at once, then claim */
	want_ready = true;
	want_heartbeat = true;
	want_claim = true;
}

/*-------------------------------------------------------------------------
 *
 * db.h
 *		quota-sched-agent's connection to the database (db.c): connecting
 *		and reconnecting, and the statements it runs.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_AGENT_DB_H
#define QS_AGENT_DB_H

#include "agent.h"

#include <libpq-fe.h>

/* The statements of the agent's protocol (db.c's table of them). */
typedef enum StatementId
{
	STMT_CLAIM,					/* claim(): jobs to run, with their commands */
	STMT_REPORT,				/* report(): how a job ended, with its output */
	STMT_HEARTBEAT,				/* heartbeat(): leases renewed, stops */
	STMT_RELEASE,				/* release(): a job given back, with its output */
	STMT_ATTEMPT,				/* attempt_started(): host, log file, handle, port */
	STMT_READY,					/* agent_ready(): what the agent can run */
	STMT_PEERS,					/* job_peers(): a multi-host job's parts */
	NUM_STATEMENTS
} StatementId;

/*
 * The SQLSTATE of a call the database's library refuses because the
 * schema is of another version (src/base/identity.h): the library was
 * installed and the server restarted, and ALTER EXTENSION quota_sched
 * UPDATE has not run yet.  Not a refusal: the call is tried again.
 */
#define SQLSTATE_SCHEMA_VERSION "55QS0"

/* what db_exec() returns */
enum
{
	DB_OK, DB_ERROR, DB_LOST
};

extern PGconn *conn;			/* NULL: not connected */
extern double reconnect_at;		/* when to try to connect again */
extern char last_sqlstate[6];	/* of the last statement that failed */
extern int	statement_timeout_ms;	/* the session's, set at each connection */

extern void hide_password(void);
extern void forget_password(void);
extern void try_connect(void);
extern void lose_connection(const char *why);
extern void collect_notifies(void);
extern bool listen_setup(void);
extern void db_end_wait(void);
extern void db_stop_taking(void);
extern int	db_exec(StatementId id, const char *const *params, PGresult **out,
					const Job *job);
extern int	db_exec_pair(const StatementId ids[2], const char *const *params[2],
						 PGresult *out[2], int *failed, const Job *job);

#endif							/* QS_AGENT_DB_H */

/*-------------------------------------------------------------------------
 *
 * job_attempt.c
 *		The rows of quota_sched.job_attempt (issue 21, "a job's own
 *		output"): where an attempt of a job ran and how it ended, as the
 *		agent that ran it says (attempt_started, report, release), and the
 *		checks of what the agent sends.
 *
 * One row per (job, attempt number).  A run that was released (no attempt
 * counted) and runs again under the same number, by this agent or
 * another, starts the row anew.  The output kept is the last
 * QS_MAX_OUTPUT_BYTES of what the agent sent, cut at a character
 * boundary; more than QS_MAX_OUTPUT_ARG_BYTES is refused.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"

#include "checks.h"
#include "job_attempt.h"
#include "query.h"

/*
 * QsAttemptTextArg returns a text argument of attempt_started (host,
 * log_path, handle), or NULL for a null: at most limit bytes (54000), not
 * empty nor holding control characters (22023), which would pass for
 * something else where it is shown.
 */
char *
QsAttemptTextArg(FunctionCallInfo fcinfo, int argno, const char *what, size_t limit)
{
	char	   *value;

	if (PG_ARGISNULL(argno))
		return NULL;
	value = text_to_cstring(PG_GETARG_TEXT_PP(argno));
	QsCheckSize(what, strlen(value), limit);
	for (const unsigned char *c = (const unsigned char *) value; *c != '\0'; c++)
		if (*c < 0x20 || *c == 0x7f)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s must not contain control characters", what)));
	if (value[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must not be empty", what),
				 errhint("Pass null for none.")));
	return value;
}

/*
 * QsAttemptOutputArg returns the output argument of report or release
 * (NULL for a null), refused over QS_MAX_OUTPUT_ARG_BYTES (54000), else
 * its last QS_MAX_OUTPUT_BYTES at most, from a character's first byte on
 * (the server's encoding: walked from the start, whatever it is).
 */
char *
QsAttemptOutputArg(FunctionCallInfo fcinfo, int argno)
{
	char	   *value;
	const char *p;
	size_t		len;

	if (argno >= PG_NARGS() || PG_ARGISNULL(argno))
		return NULL;
	value = text_to_cstring(PG_GETARG_TEXT_PP(argno));
	len = strlen(value);
	QsCheckSize("output", len, QS_MAX_OUTPUT_ARG_BYTES);
	p = value;
	while (len - (p - value) > QS_MAX_OUTPUT_BYTES)
		p += pg_mblen(p);
	return (char *) p;
}

/*
 * A run of an attempt begins, or tells its handle.  A row of another
 * agent's, or of a run that ended (released, run again under the same
 * number), is started anew; else a null keeps what the row has.
 */
static QsQuery AttemptStartQuery = {
	"INSERT INTO quota_sched.job_attempt AS a"
	"       (job_id, attempt, agent, host, log_path, handle, started_at)"
	" VALUES ($1, $2, $3, $4, $5, $6, now())"
	" ON CONFLICT (job_id, attempt) DO UPDATE"
	"   SET agent = excluded.agent,"
	"       host = CASE WHEN a.agent = excluded.agent AND a.ended_at IS NULL"
	"                   THEN coalesce(excluded.host, a.host) ELSE excluded.host END,"
	"       log_path = CASE WHEN a.agent = excluded.agent AND a.ended_at IS NULL"
	"                       THEN coalesce(excluded.log_path, a.log_path) ELSE excluded.log_path END,"
	"       handle = CASE WHEN a.agent = excluded.agent AND a.ended_at IS NULL"
	"                     THEN coalesce(excluded.handle, a.handle) ELSE excluded.handle END,"
	"       started_at = CASE WHEN a.agent = excluded.agent AND a.ended_at IS NULL"
	"                         THEN a.started_at ELSE now() END,"
	"       exit_code = CASE WHEN a.agent = excluded.agent AND a.ended_at IS NULL"
	"                        THEN a.exit_code END,"
	"       output = CASE WHEN a.agent = excluded.agent AND a.ended_at IS NULL"
	"                     THEN a.output END,"
	"       ended_at = NULL"
	" RETURNING a.*",
	6, {INT8OID, INT4OID, TEXTOID, TEXTOID, TEXTOID, TEXTOID}, SPI_OK_INSERT_RETURNING
};

/*
 * QsRecordAttemptStart records where the agent runs the job's attempt:
 * host, log_path and handle (each NULL: none, or kept).  Returns the row
 * (for the caller to return from its function).
 */
Datum
QsRecordAttemptStart(int64 job_id, int32 attempt, const char *agent, const char *host,
					 const char *log_path, const char *handle)
{
	Datum		args[6];
	char		nulls[7] = "      ";

	args[0] = Int64GetDatum(job_id);
	args[1] = Int32GetDatum(attempt);
	args[2] = CStringGetTextDatum(agent);
	args[3] = host ? CStringGetTextDatum(host) : (Datum) 0;
	args[4] = log_path ? CStringGetTextDatum(log_path) : (Datum) 0;
	args[5] = handle ? CStringGetTextDatum(handle) : (Datum) 0;
	nulls[3] = host ? ' ' : 'n';
	nulls[4] = log_path ? ' ' : 'n';
	nulls[5] = handle ? ' ' : 'n';
	if (QsQueryRun(&AttemptStartQuery, args, nulls, false, 0) != 1)
		elog(ERROR, "quota_sched: could not record attempt %d of job " INT64_FORMAT,
			 attempt, job_id);
	return PointerGetDatum(SPI_returntuple(SPI_tuptable->vals[0], SPI_tuptable->tupdesc));
}

/*
 * An attempt's run ends: its exit code and output.  What the row says of
 * where it ran stays if this agent's run wrote it and has not ended;
 * else (no attempt_started: an agent of 0.2; another agent's row) none.
 */
static QsQuery AttemptEndQuery = {
	"INSERT INTO quota_sched.job_attempt AS a"
	"       (job_id, attempt, agent, exit_code, output, ended_at)"
	" VALUES ($1, $2, $3, $4, $5, now())"
	" ON CONFLICT (job_id, attempt) DO UPDATE"
	"   SET host = CASE WHEN a.agent = excluded.agent AND a.ended_at IS NULL THEN a.host END,"
	"       log_path = CASE WHEN a.agent = excluded.agent AND a.ended_at IS NULL"
	"                       THEN a.log_path END,"
	"       handle = CASE WHEN a.agent = excluded.agent AND a.ended_at IS NULL THEN a.handle END,"
	"       started_at = CASE WHEN a.agent = excluded.agent AND a.ended_at IS NULL"
	"                         THEN a.started_at END,"
	"       agent = excluded.agent, exit_code = excluded.exit_code,"
	"       output = excluded.output, ended_at = excluded.ended_at",
	5, {INT8OID, INT4OID, TEXTOID, INT4OID, TEXTOID}, SPI_OK_INSERT
};

/*
 * QsRecordAttemptEnd records the end of the job's attempt run by the
 * agent: its exit code (NULL: none known) and the last of its output
 * (NULL: none sent).
 */
void
QsRecordAttemptEnd(int64 job_id, int32 attempt, const char *agent, const int32 *exit_code,
				   const char *output)
{
	Datum		args[5];
	char		nulls[6] = "     ";

	args[0] = Int64GetDatum(job_id);
	args[1] = Int32GetDatum(attempt);
	args[2] = CStringGetTextDatum(agent);
	args[3] = exit_code ? Int32GetDatum(*exit_code) : (Datum) 0;
	args[4] = output ? CStringGetTextDatum(output) : (Datum) 0;
	nulls[3] = exit_code ? ' ' : 'n';
	nulls[4] = output ? ' ' : 'n';
	QsQueryRun(&AttemptEndQuery, args, nulls, false, 0);
}

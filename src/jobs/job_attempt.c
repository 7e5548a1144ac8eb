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
 * boundary, made safe to show (QsSafeOutput); more than
 * QS_MAX_OUTPUT_ARG_BYTES is refused.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "mb/pg_wchar.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "checks.h"
#include "identity.h"
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
 * CheckDeviceName refuses a device's name (an element of devices) that is
 * empty, over QS_MAX_DEVICE_BYTES or holds a control character (22023).
 */
static void
CheckDeviceName(const char *name)
{
	if (name[0] == '\0' || strlen(name) > QS_MAX_DEVICE_BYTES)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a device's name must have 1 to %d bytes", QS_MAX_DEVICE_BYTES)));
	for (const unsigned char *c = (const unsigned char *) name; *c != '\0'; c++)
		if (*c < 0x20 || *c == 0x7f)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("a device's name must not contain control characters")));
}

/*
 * QsAttemptDevicesArg returns the devices argument of attempt_started (the
 * host's devices a part was given: GPU indexes or UUIDs), or (Datum) 0
 * for a null: a one-dimensional array of 1 to QS_MAX_DEVICES names, none
 * null or repeated, each a name CheckDeviceName takes (22023; 22004 for a
 * null element).
 */
Datum
QsAttemptDevicesArg(FunctionCallInfo fcinfo, int argno)
{
	ArrayType  *array;
	Datum	   *elems;
	bool	   *nulls;
	int			n;

	if (PG_ARGISNULL(argno))
		return (Datum) 0;
	array = PG_GETARG_ARRAYTYPE_P(argno);
	if (ARR_NDIM(array) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("devices must be a one-dimensional array")));
	deconstruct_array(array, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	if (n < 1 || n > QS_MAX_DEVICES)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("devices must name 1 to %d devices, not %d", QS_MAX_DEVICES, n),
				 errhint("Pass null for none.")));
	for (int i = 0; i < n; i++)
	{
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("devices must not contain nulls")));
		CheckDeviceName(TextDatumGetCString(elems[i]));
		for (int j = 0; j < i; j++)
			if (strcmp(TextDatumGetCString(elems[i]), TextDatumGetCString(elems[j])) == 0)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("devices names \"%s\" twice",
								QsShortValue(TextDatumGetCString(elems[i])))));
	}
	return PointerGetDatum(array);
}

/* LastBytes returns the end of s of at most max bytes, from a character's first byte on. */
static const char *
LastBytes(const char *s, size_t max)
{
	size_t		len = strlen(s);
	const char *p = s;

	/* the server's encoding: walked from the start, whatever it is */
	while (len - (p - s) > max)
		p += pg_mblen(p);
	return p;
}

/*
 * SafeChar appends to out what a reader is shown of the character of len
 * bytes at p (UTF-8 when utf8): itself when it is text, a newline or a
 * tab; a carriage return as a newline (after a newline's, or before one,
 * nothing); another C0 control or DEL as its picture (U+2400 + code,
 * U+2421: ESC shows as U+241B), '?' where the encoding has none; a C1
 * control (U+0080 to U+009F) or a bidirectional override or isolate (text
 * shown in another order than it is) as U+FFFD.
 */
static void
SafeChar(StringInfo out, const unsigned char *p, int len, bool utf8)
{
	unsigned char c = p[0];

	if (len == 1 && (c == '\n' || c == '\t' || (c >= 0x20 && c < 0x7f)))
		appendStringInfoChar(out, c);
	else if (len == 1 && c == '\r')
	{
		if (p[1] != '\n')
			appendStringInfoChar(out, '\n');
	}
	else if (len == 1 && !utf8)
		appendStringInfoChar(out, (c < 0x20 || c == 0x7f) ? '?' : c);
	else if (len == 1)
	{
		int			picture = c == 0x7f ? 0x2421 : 0x2400 + c;

		appendStringInfoChar(out, (char) (0xe0 | (picture >> 12)));
		appendStringInfoChar(out, (char) (0x80 | ((picture >> 6) & 0x3f)));
		appendStringInfoChar(out, (char) (0x80 | (picture & 0x3f)));
	}
	else if (utf8 && ((len == 2 && c == 0xc2 && p[1] < 0xa0) ||
					  (len == 3 && c == 0xe2 && p[1] == 0x80 && p[2] >= 0xaa && p[2] <= 0xae) ||
					  (len == 3 && c == 0xe2 && p[1] == 0x81 && p[2] >= 0xa6 && p[2] <= 0xa9)))
		appendStringInfoString(out, "\xef\xbf\xbd");
	else
		appendBinaryStringInfo(out, (const char *) p, len);
}

/*
 * QsSafeOutput returns, in the caller's memory, a job's output as it may
 * be shown to whoever reads it in a terminal (issue 37, item 4): the text
 * a reader needs (printable characters, newlines, tabs) as it is, and
 * every other control character neutralised (SafeChar), so that no job
 * can set a reader's window title, write their clipboard, clear their
 * screen or draw a fake prompt.  The result is at most as long as the
 * input, but for the pictures of controls (three bytes for one).
 */
char *
QsSafeOutput(const char *s)
{
	StringInfoData out;
	bool		utf8 = GetDatabaseEncoding() == PG_UTF8;

	initStringInfo(&out);
	for (const char *p = s; *p != '\0'; p += pg_mblen(p))
		SafeChar(&out, (const unsigned char *) p, pg_mblen(p), utf8);
	return out.data;
}

/*
 * QsAttemptOutputArg returns the output argument of report or release
 * (NULL for a null), refused over QS_MAX_OUTPUT_ARG_BYTES (54000), else
 * made safe to show (QsSafeOutput) and cut to its last
 * QS_MAX_OUTPUT_BYTES at most, from a character's first byte on.
 */
char *
QsAttemptOutputArg(FunctionCallInfo fcinfo, int argno)
{
	char	   *value;

	if (PG_ARGISNULL(argno))
		return NULL;
	value = text_to_cstring(PG_GETARG_TEXT_PP(argno));
	QsCheckSize("output", strlen(value), QS_MAX_OUTPUT_ARG_BYTES);
	/* the last bytes first: at most 64 KiB would be made safe for 4 */
	value = QsSafeOutput(LastBytes(value, QS_MAX_OUTPUT_BYTES));
	return (char *) LastBytes(value, QS_MAX_OUTPUT_BYTES);
}

PG_FUNCTION_INFO_V1(qs_safe_output);

/*
 * qs_safe_output(output text) RETURNS text: QsSafeOutput, for the update
 * that makes the output kept before 0.4 safe to show.
 */
Datum
qs_safe_output(PG_FUNCTION_ARGS)
{
	QsCheckSchemaVersion();
	PG_RETURN_TEXT_P(cstring_to_text(QsSafeOutput(text_to_cstring(PG_GETARG_TEXT_PP(0)))));
}

/*
 * A run of an attempt begins, or tells its handle.  A row of another
 * agent's, or of a run that ended (released, run again under the same
 * number), is started anew; else a null keeps what the row has.
 */
/* the row is of this agent's run of the attempt, which has not ended */
#define SAME_RUN "a.agent = excluded.agent AND a.ended_at IS NULL"
static QsQuery AttemptStartQuery = {
	"INSERT INTO quota_sched.job_attempt AS a"
	"       (job_id, attempt, agent, host, log_path, handle, started_at, rank, port, devices)"
	" VALUES ($1, $2, $3, $4, $5, $6, now(), $7, $8, $9)"
	" ON CONFLICT (job_id, attempt, rank) DO UPDATE"
	"   SET agent = excluded.agent,"
	"       host = CASE WHEN " SAME_RUN " THEN coalesce(excluded.host, a.host) ELSE excluded.host END,"
	"       log_path = CASE WHEN " SAME_RUN " THEN coalesce(excluded.log_path, a.log_path)"
	"                  ELSE excluded.log_path END,"
	"       handle = CASE WHEN " SAME_RUN " THEN coalesce(excluded.handle, a.handle)"
	"                ELSE excluded.handle END,"
	"       port = CASE WHEN " SAME_RUN " THEN coalesce(excluded.port, a.port) ELSE excluded.port END,"
	"       devices = CASE WHEN " SAME_RUN " THEN coalesce(excluded.devices, a.devices)"
	"                 ELSE excluded.devices END,"
	"       started_at = CASE WHEN " SAME_RUN " THEN a.started_at ELSE now() END,"
	"       exit_code = CASE WHEN " SAME_RUN " THEN a.exit_code END,"
	"       output = CASE WHEN " SAME_RUN " THEN a.output END,"
	"       ended_at = NULL"
	" RETURNING a.*",
	9, {INT8OID, INT4OID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, INT4OID, INT4OID,
		TEXTARRAYOID},
	SPI_OK_INSERT_RETURNING
};

/*
 * QsRecordAttemptStart records where the agent runs the job's attempt
 * (its part of that rank): host, log_path, handle (each NULL: none, or
 * kept), port (0: none, or kept) and devices ((Datum) 0: none, or kept).  Returns the row (for the caller to
 * return from its function).
 */
Datum
QsRecordAttemptStart(int64 job_id, int32 attempt, int32 rank, const char *agent,
					 const QsAttemptStart *start)
{
	Datum		args[9];
	char		nulls[10] = "         ";

	args[0] = Int64GetDatum(job_id);
	args[1] = Int32GetDatum(attempt);
	args[2] = CStringGetTextDatum(agent);
	args[3] = start->host ? CStringGetTextDatum(start->host) : (Datum) 0;
	args[4] = start->log_path ? CStringGetTextDatum(start->log_path) : (Datum) 0;
	args[5] = start->handle ? CStringGetTextDatum(start->handle) : (Datum) 0;
	args[6] = Int32GetDatum(rank);
	args[7] = Int32GetDatum(start->port);
	nulls[3] = start->host ? ' ' : 'n';
	nulls[4] = start->log_path ? ' ' : 'n';
	nulls[5] = start->handle ? ' ' : 'n';
	nulls[7] = start->port != 0 ? ' ' : 'n';
	args[8] = start->devices;
	nulls[8] = start->devices ? ' ' : 'n';
	if (QsQueryRun(&AttemptStartQuery, args, nulls, false, 0) != 1)
		elog(ERROR, "quota_sched: could not record attempt %d of job " INT64_FORMAT,
			 attempt, job_id);
	return PointerGetDatum(SPI_returntuple(SPI_tuptable->vals[0], SPI_tuptable->tupdesc));
}

/*
 * An attempt's run ends: its exit code and output.  What the row says of
 * where it ran stays if this agent's run wrote it and has not ended, or a
 * pass ended it (its lease ran out: no exit code, no output), THIS_RUN;
 * else (no attempt_started: an agent of 0.2; another agent's row) none.
 */
#define THIS_RUN "a.agent = excluded.agent AND" \
	" (a.ended_at IS NULL OR (a.exit_code IS NULL AND a.output IS NULL))"
static QsQuery AttemptEndQuery = {
	"INSERT INTO quota_sched.job_attempt AS a"
	"       (job_id, attempt, agent, exit_code, output, ended_at, rank)"
	" VALUES ($1, $2, $3, $4, $5, now(), $6)"
	" ON CONFLICT (job_id, attempt, rank) DO UPDATE"
	"   SET host = CASE WHEN " THIS_RUN " THEN a.host END,"
	"       log_path = CASE WHEN " THIS_RUN " THEN a.log_path END,"
	"       handle = CASE WHEN " THIS_RUN " THEN a.handle END,"
	"       started_at = CASE WHEN " THIS_RUN " THEN a.started_at END,"
	"       agent = excluded.agent, exit_code = excluded.exit_code,"
	"       output = excluded.output, ended_at = excluded.ended_at",
	6, {INT8OID, INT4OID, TEXTOID, INT4OID, TEXTOID, INT4OID}, SPI_OK_INSERT
};

/*
 * QsRecordAttemptEnd records the end of the job's attempt (its part of
 * that rank; 0 for a job that is not placed) run by the agent: its exit code (NULL: none known) and the last of its output
 * (NULL: none sent).
 */
void
QsRecordAttemptEnd(int64 job_id, int32 attempt, int32 rank, const char *agent,
				   const int32 *exit_code, const char *output)
{
	Datum		args[6];
	char		nulls[7] = "      ";

	args[0] = Int64GetDatum(job_id);
	args[1] = Int32GetDatum(attempt);
	args[2] = CStringGetTextDatum(agent);
	args[3] = exit_code ? Int32GetDatum(*exit_code) : (Datum) 0;
	args[4] = output ? CStringGetTextDatum(output) : (Datum) 0;
	args[5] = Int32GetDatum(rank);
	nulls[3] = exit_code ? ' ' : 'n';
	nulls[4] = output ? ' ' : 'n';
	QsQueryRun(&AttemptEndQuery, args, nulls, false, 0);
}

/*
 * Whether the attempt $2 of job $1 ran on agent $3 and was the last the
 * job lost: its last requeue is a lease that ran out (LEASE_EXPIRED).
 */
static QsQuery AttemptLostQuery = {
	"SELECT 1 FROM quota_sched.job_attempt a"
	" WHERE a.job_id = $1 AND a.attempt = $2 AND a.agent = $3"
	"   AND (SELECT e.reason FROM quota_sched.job_event e"
	"         WHERE e.job_id = $1 AND e.to_state = 'RUNNABLE'"
	"         ORDER BY e.id DESC LIMIT 1) = 'LEASE_EXPIRED'",
	3, {INT8OID, INT4OID, TEXTOID}, SPI_OK_SELECT
};

/*
 * QsAttemptLostBy tells whether an attempt of a job ran on the agent
 * given and ended because its lease ran out, the last end of the job's
 * attempts (the late SUCCEEDED of such an attempt is taken: agent_api.c).
 */
bool
QsAttemptLostBy(int64 job_id, int32 attempt, const char *agent)
{
	Datum		args[3] = {Int64GetDatum(job_id), Int32GetDatum(attempt),
	CStringGetTextDatum(agent)};

	return QsQueryRun(&AttemptLostQuery, args, NULL, false, 1) == 1;
}

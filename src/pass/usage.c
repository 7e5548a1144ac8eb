/*-------------------------------------------------------------------------
 *
 * usage.c
 *		The counters of held capacity (scheduling.md 3.1): per queue, share
 *		and unit, the instances held by SCHEDULED, STARTING and RUNNING
 *		jobs, those of them whose stop is pending, and the number of jobs,
 *		kept current in the transaction of every change that moves them, so
 *		that a pass reads a few counter rows instead of the jobs.
 *
 * The job_usage row triggers (AFTER UPDATE OF state, stop_reason; AFTER
 * DELETE) add each job's difference to a tally in memory; the job_usage_flush
 * statement trigger, fired after them, adds the tally to the counter rows
 * of quota_sched.held_capacity, in the stripe of this backend (1 + its
 * process number modulo QS_USAGE_STRIPES - 1), so that concurrent reports
 * rarely wait for one another's row lock; a pass writes stripe 0, which
 * nobody else writes, so that it never waits for a row of the counters
 * that a report or terminate not yet committed holds (the pass holds its
 * queue's lock: whoever holds that never waits for a row lock).  Whatever changes a job, the C code of
 * agents, users or passes, or an admin's own statement, the triggers see
 * it: no code path can forget the counters.  A counter is the sum of its
 * stripes (QsReadUsage).  Rows are updated in place, their key never
 * changing, on pages with room to spare: such updates leave no dead index
 * entry, so reading the counters costs the same however fast jobs churn.
 *
 * A tally left unwritten at commit would be a counter gone wrong: the
 * commit is refused instead (QsUsageXactEvent).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "storage/proc.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "checks.h"
#include "config_cache.h"
#include "host_usage.h"
#include "identity.h"
#include "job_columns.h"
#include "over_time.h"
#include "policy.h"
#include "query.h"
#include "constants.h"
#include "usage.h"
#include "word_io.h"

PG_FUNCTION_INFO_V1(qs_job_usage);
PG_FUNCTION_INFO_V1(qs_job_usage_flush);

/*
 * The tally of one queue, share and unit since the last flush, by the
 * statements of one (sub)transaction nesting level.
 */
typedef struct UsageCell
{
	char	   *job_queue;
	char	   *quota_share;
	char	   *capacity_unit;
	int			level;			/* GetCurrentTransactionNestLevel() of the tally */
	int64		instances;
	int64		stopping_instances;
	int64		jobs;
} UsageCell;

/* The tally of the current statement, in TopTransactionContext. */
static UsageCell *Tally;
static int	TallyCount;
static int	TallyCap;

/*
 * QsUsageReset forgets the tally, at transaction end.
 */
void
QsUsageReset(void)
{
	Tally = NULL;
	TallyCount = TallyCap = 0;
	QsHostTallyReset();
}

/*
 * ForgetTally forgets the tallies made at nesting level `level` or deeper.
 */
static void
ForgetTally(int level)
{
	int			kept = 0;

	for (int i = 0; i < TallyCount; i++)
		if (Tally[i].level < level)
			Tally[kept++] = Tally[i];
	TallyCount = kept;
	QsHostTallyForget(level);
}

/*
 * QsUsageSubXactAbort forgets, when a subtransaction aborts, the tallies
 * made inside it: the changes they counted are undone.  A tally made
 * outside it is kept: a subtransaction may begin and abort while a
 * statement's AFTER triggers fire (another trigger on the jobs with an
 * exception block), between its row triggers and its statement trigger,
 * and that statement's changes stand.
 */
void
QsUsageSubXactAbort(void)
{
	ForgetTally(GetCurrentTransactionNestLevel());
}

/*
 * QsUsageXactEvent refuses to commit a transaction whose tally was not
 * written: the counters would no longer match the jobs.
 */
void
QsUsageXactEvent(XactEvent event)
{
	if (event == XACT_EVENT_PRE_COMMIT || event == XACT_EVENT_PARALLEL_PRE_COMMIT ||
		event == XACT_EVENT_PRE_PREPARE)
	{
		for (int i = 0; i < TallyCount; i++)
			if (Tally[i].instances != 0 || Tally[i].stopping_instances != 0 ||
				Tally[i].jobs != 0)
				ereport(ERROR,
						(errcode(ERRCODE_INTERNAL_ERROR),
						 errmsg("quota_sched: a change of held capacity was not written"),
						 errdetail("Job queue \"%s\", quota share \"%s\", capacity unit \"%s\".",
								   Tally[i].job_queue, Tally[i].quota_share,
								   Tally[i].capacity_unit)));
		QsHostTallyCheck();
	}
	else
		QsUsageReset();
}

/*
 * TallyCellOf returns the tally of a queue, share and unit, adding it.
 */
static UsageCell *
TallyCellOf(const char *queue, const char *share, const char *unit)
{
	int			level = GetCurrentTransactionNestLevel();
	MemoryContext old;
	UsageCell  *cell;

	for (int i = 0; i < TallyCount; i++)
		if (Tally[i].level == level &&
			strcmp(Tally[i].capacity_unit, unit) == 0 &&
			strcmp(Tally[i].quota_share, share) == 0 &&
			strcmp(Tally[i].job_queue, queue) == 0)
			return &Tally[i];
	old = MemoryContextSwitchTo(TopTransactionContext);
	if (TallyCount == TallyCap)
	{
		TallyCap = TallyCap ? 2 * TallyCap : 8;
		Tally = Tally ? repalloc(Tally, sizeof(UsageCell) * TallyCap) :
			palloc(sizeof(UsageCell) * TallyCap);
	}
	cell = &Tally[TallyCount++];
	cell->job_queue = pstrdup(queue);
	cell->quota_share = pstrdup(share);
	cell->capacity_unit = pstrdup(unit);
	cell->level = level;
	cell->instances = cell->stopping_instances = cell->jobs = 0;
	MemoryContextSwitchTo(old);
	return cell;
}

static char *
TextColumn(HeapTuple tuple, TupleDesc desc, JobColumn column, bool *isnull)
{
	Datum		value = heap_getattr(tuple, JobAttnum(desc, column), desc, isnull);

	return *isnull ? NULL : TextDatumGetCString(value);
}

/*
 * TallyJob adds (sign +1) or takes away (-1) what one version of a job
 * holds: its instances when it is SCHEDULED, STARTING or RUNNING, and them
 * again as stopping when its stop is pending; and so what its parts hold
 * on their hosts (host_usage.c).
 */
static void
TallyJob(HeapTuple tuple, TupleDesc desc, int sign)
{
	bool		isnull;
	char	   *state = TextColumn(tuple, desc, JC_STATE, &isnull);
	QsJobState	s;
	int64		count;
	UsageCell  *cell;

	if (isnull)
		return;
	if (!QsJobStateFromName(state, &s))
		QsUnknownWord(ERRCODE_INVALID_TEXT_REPRESENTATION, QS_KIND_JOB_STATE, state,
					  psprintf("job " INT64_FORMAT,
							   DatumGetInt64(heap_getattr(tuple, JobAttnum(desc, JC_ID), desc,
														  &isnull))));
	if (!QsHoldsCapacity(s))
		return;
	count = DatumGetInt32(heap_getattr(tuple, JobAttnum(desc, JC_INSTANCE_COUNT), desc, &isnull));
	cell = TallyCellOf(TextColumn(tuple, desc, JC_JOB_QUEUE, &isnull),
					   TextColumn(tuple, desc, JC_QUOTA_SHARE, &isnull),
					   TextColumn(tuple, desc, JC_CAPACITY_UNIT, &isnull));
	cell->instances += sign * count;
	cell->jobs += sign;
	(void) heap_getattr(tuple, JobAttnum(desc, JC_STOP_REASON), desc, &isnull);
	if (!isnull)
		cell->stopping_instances += sign * count;
	QsHostTallyJob(tuple, desc, cell->job_queue, cell->capacity_unit, !isnull, sign,
				   cell->level);
}

/*
 * qs_job_usage (AFTER UPDATE OF state, stop_reason, part_agents,
 * part_instances, or AFTER DELETE, for each row whose holding may change) tallies the difference the change
 * makes to its share's held capacity.
 */
Datum
qs_job_usage(PG_FUNCTION_ARGS)
{
	TriggerData *td = CheckJobTrigger(fcinfo, "job_usage", false);
	TupleDesc	desc = RelationGetDescr(td->tg_relation);

	QsCheckSchemaVersion();
	TallyJob(td->tg_trigtuple, desc, -1);
	if (TRIGGER_FIRED_BY_UPDATE(td->tg_event))
		TallyJob(td->tg_newtuple, desc, +1);
	return PointerGetDatum(NULL);
}

/* How many rows a counter is spread over. */
#define QS_USAGE_STRIPES 16

/*
 * Adds the tallies to the counters in one stripe, in the order of their
 * keys (the tally is sorted), so that two writers of the same stripe lock
 * its rows in one order, with what each stripe held this day, week and
 * month carried on to the change.
 */
static QsQuery AddQuery = {
	"INSERT INTO quota_sched.held_capacity AS h"
	" SELECT q, s, u, $7, i, st, j, $8, 0, 0, 0"
	"   FROM unnest($1::text[], $2::text[], $3::text[], $4::int8[], $5::int8[], $6::int8[])"
	"        AS t(q, s, u, i, st, j)"
	" ON CONFLICT (job_queue, quota_share, capacity_unit, stripe) DO UPDATE"
	"   SET instances = h.instances + excluded.instances,"
	"       stopping_instances = h.stopping_instances + excluded.stopping_instances,"
	"       jobs = h.jobs + excluded.jobs,"
	"       changed_at = greatest(h.changed_at, excluded.changed_at),"
	"       spent_day = quota_sched.spent_after(h.spent_day, h.changed_at, h.instances,"
	"                     excluded.instances, excluded.changed_at, 'DAY'),"
	"       spent_week = quota_sched.spent_after(h.spent_week, h.changed_at, h.instances,"
	"                     excluded.instances, excluded.changed_at, 'WEEK'),"
	"       spent_month = quota_sched.spent_after(h.spent_month, h.changed_at, h.instances,"
	"                     excluded.instances, excluded.changed_at, 'MONTH')",
	8, {TEXTARRAYOID, TEXTARRAYOID, TEXTARRAYOID, INT8ARRAYOID, INT8ARRAYOID, INT8ARRAYOID,
		INT2OID, TIMESTAMPTZOID},
	SPI_OK_INSERT
};

/*
 * The changes of held instances of queues with a fair_half_life, for the
 * pass's memory of borrowing (held_change, tables.sql).
 */
static QsQuery LogQuery = {
	"INSERT INTO quota_sched.held_change"
	" SELECT q, s, u, $4, d FROM unnest($1::text[], $2::text[], $3::text[], $5::int8[])"
	"        AS t(q, s, u, d)",
	5, {TEXTARRAYOID, TEXTARRAYOID, TEXTARRAYOID, TIMESTAMPTZOID, INT8ARRAYOID},
	SPI_OK_INSERT
};

/*
 * LogChanges writes the changes of held instances of the counters given
 * (cols: queue, share, unit, instances, ...) whose queue has a
 * fair_half_life to held_change.
 */
static void
LogChanges(QsArray *cols, Datum at)
{
	QsArray		log[4];
	Oid			types[4] = {TEXTOID, TEXTOID, TEXTOID, INT8OID};
	Datum		args[5];

	for (int c = 0; c < 4; c++)
		QsArrayInit(&log[c], types[c], cols[0].n);
	for (int i = 0; i < cols[0].n; i++)
	{
		const QsSubmitTarget *target;

		if (DatumGetInt64(cols[3].values[i]) == 0)
			continue;
		target = QsLookupSubmitTarget(TextDatumGetCString(cols[0].values[i]),
									  TextDatumGetCString(cols[1].values[i]));
		if (target == NULL || !target->remembers_borrowing)
			continue;
		for (int c = 0; c < 4; c++)
			QsArrayPush(&log[c], cols[c].values[i], false);
	}
	if (log[0].n == 0)
		return;
	args[0] = QsArrayDatum(&log[0]);
	args[1] = QsArrayDatum(&log[1]);
	args[2] = QsArrayDatum(&log[2]);
	args[3] = at;
	args[4] = QsArrayDatum(&log[3]);
	QsQueryRun(&LogQuery, args, NULL, false, 0);
}

/*
 * TRUNCATE, not DELETE: under REPEATABLE READ a DELETE would keep a row
 * written by a transaction that committed after this one's snapshot.
 */
static QsQuery TruncateQuery = {
	"TRUNCATE quota_sched.held_capacity", 0, {InvalidOid}, SPI_OK_UTILITY
};
static QsQuery TruncateHostsQuery = {
	"TRUNCATE quota_sched.host_held, quota_sched.host_held_change", 0, {InvalidOid}, SPI_OK_UTILITY
};

/*
 * CompareCells orders tallies by queue, share and unit (byte order).
 */
static int
CompareCells(const void *a, const void *b)
{
	const UsageCell *x = a;
	const UsageCell *y = b;
	int			c = strcmp(x->job_queue, y->job_queue);

	if (c == 0)
		c = strcmp(x->quota_share, y->quota_share);
	if (c == 0)
		c = strcmp(x->capacity_unit, y->capacity_unit);
	return c;
}

/*
 * UsageStripe is the stripe this backend writes: 0 for a pass, which
 * nobody else writes, or the backend's own.
 */
static int16
UsageStripe(void)
{
	return QsWrite.pass ? 0 : 1 + MyProc->pgprocno % (QS_USAGE_STRIPES - 1);
}

/*
 * WriteTally adds the tallies made at nesting level `level` or deeper to
 * this backend's stripe of their counters (those of outer levels belong to
 * statements whose own statement trigger is still to fire).  Tallies of one
 * counter made at several levels are added together first.
 */
static void
WriteTally(int level)
{
	QsArray		cols[6];
	Oid			types[6] = {TEXTOID, TEXTOID, TEXTOID, INT8OID, INT8OID, INT8OID};
	Datum		args[8];
	const UsageCell *last = NULL;

	for (int c = 0; c < 6; c++)
		QsArrayInit(&cols[c], types[c], TallyCount);
	qsort(Tally, TallyCount, sizeof(UsageCell), CompareCells);
	for (int i = 0; i < TallyCount; i++)
	{
		UsageCell  *cell = &Tally[i];
		int64		add[3] = {cell->instances, cell->stopping_instances, cell->jobs};

		if (cell->level < level || (add[0] == 0 && add[1] == 0 && add[2] == 0))
			continue;
		if (last != NULL && CompareCells(last, cell) == 0)
		{
			for (int c = 3; c < 6; c++)
			{
				Datum	   *v = &cols[c].values[cols[c].n - 1];

				*v = Int64GetDatum(DatumGetInt64(*v) + add[c - 3]);
			}
			continue;
		}
		QsArrayPush(&cols[0], CStringGetTextDatum(cell->job_queue), false);
		QsArrayPush(&cols[1], CStringGetTextDatum(cell->quota_share), false);
		QsArrayPush(&cols[2], CStringGetTextDatum(cell->capacity_unit), false);
		for (int c = 3; c < 6; c++)
			QsArrayPush(&cols[c], Int64GetDatum(add[c - 3]), false);
		last = cell;
	}
	if (cols[0].n == 0)
		return;
	for (int c = 0; c < 6; c++)
		args[c] = QsArrayDatum(&cols[c]);
	args[6] = Int16GetDatum(UsageStripe());
	args[7] = TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
	QsQueryRun(&AddQuery, args, NULL, false, 0);
	LogChanges(cols, args[7]);
}

/*
 * qs_job_usage_flush (AFTER UPDATE, DELETE or TRUNCATE, for each
 * statement) adds the tally of the statement's row triggers to the
 * counters, as the extension's owner; after a TRUNCATE of the jobs, every
 * counter is zero.
 */
Datum
qs_job_usage_flush(PG_FUNCTION_ARGS)
{
	TriggerData *td = (TriggerData *) fcinfo->context;
	int			level = GetCurrentTransactionNestLevel();
	bool		truncate;
	bool		any = false;
	QsSavedUser saved;

	QsCheckSchemaVersion();
	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_FOR_STATEMENT(td->tg_event) ||
		TRIGGER_FIRED_BEFORE(td->tg_event))
		elog(ERROR, "quota_sched: job_usage_flush: must be fired as an AFTER statement trigger");
	truncate = TRIGGER_FIRED_BY_TRUNCATE(td->tg_event);
	for (int i = 0; i < TallyCount && !any; i++)
		any = Tally[i].level >= level;
	any = any || QsHostTallyAny(level);
	if (!any && !truncate)
		return PointerGetDatum(NULL);

	QsBecomeOwner(QsExtensionOwner(), &saved);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "quota_sched: SPI_connect failed");
	if (truncate)
	{
		QsQueryRun(&TruncateQuery, NULL, NULL, false, 0);
		QsQueryRun(&TruncateHostsQuery, NULL, NULL, false, 0);
	}
	else
	{
		WriteTally(level);
		QsHostTallyWrite(level);
	}
	SPI_finish();
	QsRestoreUser(&saved);
	/* after a TRUNCATE every counter is zero: no tally is left to write */
	if (truncate)
		QsUsageReset();
	else
		ForgetTally(level);
	return PointerGetDatum(NULL);
}

/*
 * A queue's counter rows, the stripes of each share and unit next to one
 * another (in the order of the primary key), which QsReadUsage adds up:
 * a GROUP BY would sum them as numeric.
 */
static QsQuery ReadQuery[2] = {
	{
		"SELECT quota_share, capacity_unit, instances, stopping_instances, jobs"
		"  FROM quota_sched.held_capacity WHERE job_queue = $1"
		" ORDER BY quota_share, capacity_unit",
		1, {TEXTOID}, SPI_OK_SELECT
	},
	{
		"SELECT quota_share, capacity_unit, instances, stopping_instances, jobs,"
		"       spent_day, spent_week, spent_month, changed_at"
		"  FROM quota_sched.held_capacity WHERE job_queue = $1"
		" ORDER BY quota_share, capacity_unit",
		1, {TEXTOID}, SPI_OK_SELECT
	},
};

/*
 * QsUsageSpentAt sets what each row spent in the current day, week and
 * month at time now: the sum of its stripes' (QsSpentAt, as
 * quota_sched.spent_at gives it, with each period's start found once), in
 * the order they were read.
 */
void
QsUsageSpentAt(QsUsageRows *rows, TimestampTz now)
{
	QsTime		start[QS_NPERIODS];

	for (int p = 0; p < QS_NPERIODS; p++)
		start[p] = QsPeriodStart(now, (QsPeriod) p);
	for (int i = 0; i < rows->n; i++)
		for (int p = 0; p < QS_NPERIODS; p++)
			rows->rows[i].spent[p] = 0;
	for (int i = 0; i < rows->nstripes; i++)
	{
		QsUsageStripe *st = &rows->stripes[i];

		for (int p = 0; p < QS_NPERIODS; p++)
			rows->rows[st->row].spent[p] += QsSpentFrom(st->spent[p], st->changed_at,
														st->instances, now, start[p]);
	}
}

/*
 * ReadStripe keeps a stripe read with what was spent (QsUsageStripe).
 */
static void
ReadStripe(QsUsageRows *result, HeapTuple tup, TupleDesc desc)
{
	QsUsageStripe *st = &result->stripes[result->nstripes++];
	bool		isnull;

	st->row = result->n - 1;
	st->instances = DatumGetInt64(SPI_getbinval(tup, desc, 3, &isnull));
	for (int p = 0; p < QS_NPERIODS; p++)
		st->spent[p] = DatumGetFloat8(SPI_getbinval(tup, desc, 6 + p, &isnull));
	st->changed_at = QsCheckBudgetTime(DatumGetTimestampTz(SPI_getbinval(tup, desc,
																		 6 + QS_NPERIODS,
																		 &isnull)));
}

/*
 * QsReadUsage reads the counters of a queue, in the caller's memory: a row
 * per share and unit, the sum of its stripes, and with spent its stripes
 * as stored, from which QsUsageSpentAt gives what each spent at a time.
 * The caller is connected to SPI and runs as the owner.
 */
QsUsageRows
QsReadUsage(const char *queue, bool spent)
{
	MemoryContext outer = CurrentMemoryContext;
	Datum		args[1] = {CStringGetTextDatum(queue)};
	uint64		n = QsQueryRun(&ReadQuery[spent], args, NULL, false, 0);
	TupleDesc	desc = SPI_tuptable->tupdesc;
	QsUsageRows result = {0};

	MemoryContextSwitchTo(outer);	/* SPI left its own current */
	result.rows = palloc0(sizeof(QsUsageRow) * (n + 1));
	if (spent)
		result.stripes = palloc0(sizeof(QsUsageStripe) * (n + 1));
	for (uint64 i = 0; i < n; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		QsUsageRow *row = &result.rows[result.n];
		bool		isnull;
		char	   *share = TextDatumGetCString(SPI_getbinval(tup, desc, 1, &isnull));
		char	   *unit = TextDatumGetCString(SPI_getbinval(tup, desc, 2, &isnull));

		/* one string for rows of one unit in a row: a pass compares pointers */
		if (result.n > 0 && strcmp(row[-1].capacity_unit, unit) == 0)
		{
			pfree(unit);
			unit = row[-1].capacity_unit;
		}
		if (result.n > 0 && unit == row[-1].capacity_unit &&
			strcmp(row[-1].quota_share, share) == 0)
		{
			row--;				/* another stripe of the last */
			pfree(share);
		}
		else
		{
			row->quota_share = share;
			row->capacity_unit = unit;
			result.n++;
		}
		row->instances += DatumGetInt64(SPI_getbinval(tup, desc, 3, &isnull));
		row->stopping_instances += DatumGetInt64(SPI_getbinval(tup, desc, 4, &isnull));
		row->jobs += DatumGetInt64(SPI_getbinval(tup, desc, 5, &isnull));
		if (spent)
			ReadStripe(&result, tup, desc);
	}
	SPI_freetuptable(SPI_tuptable);
	return result;
}

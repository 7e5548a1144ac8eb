/*-------------------------------------------------------------------------
 *
 * replay_sql.c
 *		What-if (scheduling.md 3.15), the shell: replay_run reads a queue's
 *		recorded workload (quota_sched.replay_workload) and its
 *		configuration as it is (baseline) and with a candidate change
 *		applied in a subtransaction that is rolled back (candidate: the
 *		tables validate the change as they validate any), runs both through
 *		the policy core's replay (src/core/replay.c) and returns what became
 *		of each job and what each share borrowed.  Nothing is kept.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"

#include "checks.h"
#include "config_store.h"
#include "identity.h"
#include "pass_load.h"
#include "query.h"
#include "replay.h"

PG_FUNCTION_INFO_V1(qs_replay_run);
PG_FUNCTION_INFO_V1(qs_replay_check);

/* The longest range a replay covers, and the most jobs it reads. */
#define QS_REPLAY_MAX_DAYS 366
#define QS_REPLAY_MAX_JOBS 1000000

/* A job of the workload, with the names its scenario resolves. */
typedef struct WorkJob
{
	QsReplayJob job;
	char	   *share;
	char	   *unit;
} WorkJob;

typedef struct Workload
{
	int			n;
	WorkJob    *jobs;
} Workload;

/* A scenario's configuration, in the replay's memory. */
typedef struct Scenario
{
	QsReplayConfig cfg;
	int			njobs;
	QsReplayJob *jobs;			/* those of its shares */
	int		   *work_index;		/* [job]: its index in the workload */
} Scenario;

static QsQuery WorkloadQuery = {
	"SELECT job_id, quota_share, capacity_unit, instance_count, priority, arrival, queued_at,"
	"       timeout, max_attempts, preemption_retries, change_at, change_to, work, fails, leave_at"
	"  FROM quota_sched.replay_workload($1, $2, $3)",
	3, {TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID}, SPI_OK_SELECT
};

static QsQuery ApplyQuery = {
	"SELECT quota_sched.replay_apply($1, $2)",
	2, {TEXTOID, JSONBOID}, SPI_OK_SELECT
};

static QsTime
IntervalOr(HeapTuple tup, TupleDesc desc, int col, QsTime none)
{
	bool		isnull;
	Datum		d = SPI_getbinval(tup, desc, col, &isnull);

	return isnull ? none : QsIntervalUsecs(DatumGetIntervalP(d));
}

/* A job's priority changes, from its two arrays. */
static void
ReadChanges(WorkJob *w, HeapTuple tup, TupleDesc desc)
{
	bool		isnull;
	Datum		at = SPI_getbinval(tup, desc, 11, &isnull);
	Datum	   *ats,
			   *tos;
	int			n,
				m;

	if (isnull)
		return;
	deconstruct_array(DatumGetArrayTypeP(at), TIMESTAMPTZOID, 8, true, TYPALIGN_DOUBLE,
					  &ats, NULL, &n);
	deconstruct_array(DatumGetArrayTypeP(SPI_getbinval(tup, desc, 12, &isnull)), INT4OID, 4,
					  true, TYPALIGN_INT, &tos, NULL, &m);
	w->job.nchanges = Min(n, m);
	w->job.change_at = palloc(sizeof(QsTime) * (n + 1));
	w->job.change_to = palloc(sizeof(int32) * (n + 1));
	for (int i = 0; i < w->job.nchanges; i++)
	{
		((QsTime *) w->job.change_at)[i] = DatumGetTimestampTz(ats[i]);
		((int32 *) w->job.change_to)[i] = DatumGetInt32(tos[i]);
	}
}

static void
ReadJob(WorkJob *w, HeapTuple tup, TupleDesc desc)
{
	bool		isnull;
	Datum		d;

	w->job.id = DatumGetInt64(SPI_getbinval(tup, desc, 1, &isnull));
	w->share = pstrdup(SPI_getvalue(tup, desc, 2));
	w->unit = pstrdup(SPI_getvalue(tup, desc, 3));
	w->job.count = DatumGetInt32(SPI_getbinval(tup, desc, 4, &isnull));
	w->job.priority = DatumGetInt32(SPI_getbinval(tup, desc, 5, &isnull));
	w->job.arrival = DatumGetTimestampTz(SPI_getbinval(tup, desc, 6, &isnull));
	w->job.queued_at = DatumGetTimestampTz(SPI_getbinval(tup, desc, 7, &isnull));
	w->job.timeout = IntervalOr(tup, desc, 8, QS_NO_TIME);
	w->job.max_attempts = DatumGetInt32(SPI_getbinval(tup, desc, 9, &isnull));
	d = SPI_getbinval(tup, desc, 10, &isnull);
	w->job.preemption_retries = isnull ? -1 : DatumGetInt32(d);
	ReadChanges(w, tup, desc);
	w->job.work = IntervalOr(tup, desc, 13, QS_UNBOUNDED);
	if (w->job.work < 0)
		w->job.work = 0;
	w->job.fails = DatumGetBool(SPI_getbinval(tup, desc, 14, &isnull));
	d = SPI_getbinval(tup, desc, 15, &isnull);
	w->job.leave_at = isnull ? QS_NO_TIME : DatumGetTimestampTz(d);
}

/* ReadWorkload reads the jobs of the replay, in the caller's memory. */
static Workload
ReadWorkload(const char *queue, TimestampTz from, TimestampTz to)
{
	Datum		args[3] = {CStringGetTextDatum(queue), TimestampTzGetDatum(from),
	TimestampTzGetDatum(to)};
	MemoryContext cxt = CurrentMemoryContext;
	uint64		n = QsQueryRun(&WorkloadQuery, args, NULL, true, QS_REPLAY_MAX_JOBS + 1);
	Workload	w;

	if (n > QS_REPLAY_MAX_JOBS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("the workload of job queue \"%s\" from %s to %s has more than %d jobs",
						QsShortValue(queue), timestamptz_to_str(from), timestamptz_to_str(to),
						QS_REPLAY_MAX_JOBS),
				 errhint("Replay a shorter range.")));
	MemoryContextSwitchTo(cxt);
	w.n = (int) n;
	w.jobs = palloc0(sizeof(WorkJob) * (n + 1));
	for (uint64 i = 0; i < n; i++)
		ReadJob(&w.jobs[i], SPI_tuptable->vals[i], SPI_tuptable->tupdesc);
	SPI_freetuptable(SPI_tuptable);
	return w;
}

/* The index of a name among n, or -1. */
static int
NameIndex(const char *const *names, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(names[i], name) == 0)
			return i;
	return -1;
}

/*
 * CopyUnits copies the queue's units, with the environment's limits, and
 * adds those that only jobs of the workload name (E(u) = 0: such a job
 * never runs); an ideal agent fits every job.
 */
static void
CopyUnits(Scenario *sc, const QsQueueState *qs, const Workload *w)
{
	QsUnit	   *units = palloc0(sizeof(QsUnit) * (qs->in.nunits + w->n + 1));
	const char **names = palloc0(sizeof(char *) * (qs->in.nunits + w->n + 1));
	int			n = 0;

	for (int u = 0; u < qs->in.nunits; u++)
	{
		names[n] = pstrdup(qs->in.units[u].name);
		units[n].name = names[n];
		units[n++].env_limit = qs->in.units[u].env_limit;
	}
	for (int i = 0; i < w->n; i++)
		if (NameIndex(names, n, w->jobs[i].unit) < 0)
		{
			names[n] = w->jobs[i].unit;
			units[n].name = names[n];
			n++;
		}
	sc->cfg.nunits = n;
	sc->cfg.units = units;
}

/* CopyShares copies the queue's shares over the scenario's units. */
static void
CopyShares(Scenario *sc, const QsQueueState *qs)
{
	int			nunits = sc->cfg.nunits;
	QsShare    *shares = palloc0(sizeof(QsShare) * (qs->in.nshares + 1));
	QsPeriod   *periods = palloc0(sizeof(QsPeriod) * (qs->in.nshares + 1));

	for (int s = 0; s < qs->in.nshares; s++)
	{
		const QsShare *from = &qs->in.shares[s];
		int64	   *capacity = palloc0(sizeof(int64) * nunits);
		double	   *budget = palloc(sizeof(double) * nunits);

		shares[s] = *from;
		shares[s].name = pstrdup(from->name);
		for (int u = 0; u < nunits; u++)
		{
			int			at = u < qs->in.nunits ? u : -1;

			capacity[u] = at >= 0 ? from->capacity[at] : 0;
			budget[u] = at >= 0 && from->budget != NULL ? from->budget[at] : -1;
		}
		shares[s].capacity = capacity;
		shares[s].budget = budget;
		shares[s].spent = NULL;
		periods[s] = qs->periods[s];
	}
	sc->cfg.nshares = qs->in.nshares;
	sc->cfg.shares = shares;
	sc->cfg.periods = periods;
}

/* SetJobs picks the workload's jobs of the scenario's shares. */
static void
SetJobs(Scenario *sc, const Workload *w)
{
	const char **shares = palloc(sizeof(char *) * (sc->cfg.nshares + 1));
	const char **units = palloc(sizeof(char *) * (sc->cfg.nunits + 1));

	for (int s = 0; s < sc->cfg.nshares; s++)
		shares[s] = sc->cfg.shares[s].name;
	for (int u = 0; u < sc->cfg.nunits; u++)
		units[u] = sc->cfg.units[u].name;
	sc->jobs = palloc0(sizeof(QsReplayJob) * (w->n + 1));
	sc->work_index = palloc0(sizeof(int) * (w->n + 1));
	sc->njobs = 0;
	for (int i = 0; i < w->n; i++)
	{
		int			s = NameIndex(shares, sc->cfg.nshares, w->jobs[i].share);

		if (s < 0)
			continue;			/* a share the scenario does not have */
		sc->jobs[sc->njobs] = w->jobs[i].job;
		sc->jobs[sc->njobs].share = s;
		sc->jobs[sc->njobs].unit = NameIndex(units, sc->cfg.nunits, w->jobs[i].unit);
		sc->work_index[sc->njobs++] = i;
	}
}

/*
 * LoadScenario reads the queue's configuration as the transaction sees it
 * into sc, in cxt.
 */
static void
LoadScenario(Scenario *sc, const char *queue, const Workload *w, MemoryContext cxt)
{
	QsQueueState qs;
	MemoryContext old;

	if (!QsLoadQueueState(&qs, queue, GetCurrentTransactionStartTimestamp(), false))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("job queue \"%s\" does not exist", QsShortValue(queue))));
	old = MemoryContextSwitchTo(cxt);
	memset(sc, 0, sizeof(*sc));
	sc->cfg.env_enabled = qs.in.env_enabled;
	sc->cfg.fair = qs.in.fair;
	sc->cfg.half_life = qs.half_life;
	sc->cfg.runnable_timeout = qs.runnable_timeout == NULL ? QS_NO_TIME :
		QsIntervalUsecs(qs.runnable_timeout);
	CopyUnits(sc, &qs, w);
	CopyShares(sc, &qs);
	SetJobs(sc, w);
	MemoryContextSwitchTo(old);
	QsFreeQueueState(&qs);
}

/*
 * LoadCandidate applies the changes in a subtransaction, reads the
 * configuration, and rolls the subtransaction back; an error of the
 * change (the tables' own, with their SQLSTATE) is raised after the
 * rollback.
 */
static void
LoadCandidate(Scenario *sc, const char *queue, Datum changes, const Workload *w,
			  MemoryContext cxt)
{
	MemoryContext old = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	Datum		args[2] = {CStringGetTextDatum(queue), changes};

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(old);
	PG_TRY();
	{
		QsQueryRun(&ApplyQuery, args, NULL, false, 0);
		LoadScenario(sc, queue, w, cxt);
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(old);
		CurrentResourceOwner = owner;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(old);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(old);
		CurrentResourceOwner = owner;
		ReThrowError(edata);
	}
	PG_END_TRY();
}

/* The replay's memory: one context that lasts, one reset after each pass. */
typedef struct ReplayContexts
{
	MemoryContext keep;
	MemoryContext pass;
} ReplayContexts;

static void *
KeepAlloc(void *arg, size_t size)
{
	return MemoryContextAllocZero(((ReplayContexts *) arg)->keep, size);
}

static void *
PassAlloc(void *arg, size_t size)
{
	return MemoryContextAllocZero(((ReplayContexts *) arg)->pass, size);
}

static void
PassReset(void *arg)
{
	MemoryContextReset(((ReplayContexts *) arg)->pass);
	CHECK_FOR_INTERRUPTS();
}

static Datum
TimeOrNull(QsTime t, bool *isnull)
{
	*isnull = t == QS_NO_TIME;
	return TimestampTzGetDatum(t);
}

/* EmitJob puts the row of one job of a scenario into the result. */
static void
EmitJob(ReturnSetInfo *rsinfo, const char *scenario, const Scenario *sc, int i,
		const QsReplayResult *r)
{
	const QsReplayJob *j = &sc->jobs[i];
	Datum		values[13];
	bool		nulls[13] = {false};

	values[0] = CStringGetTextDatum(scenario);
	values[1] = Int64GetDatum(j->id);
	values[2] = CStringGetTextDatum(sc->cfg.shares[j->share].name);
	values[3] = CStringGetTextDatum(sc->cfg.units[j->unit].name);
	values[4] = TimestampTzGetDatum(j->arrival);
	values[5] = TimeOrNull(r->first_dispatch, &nulls[5]);
	values[6] = TimeOrNull(r->ended_at, &nulls[6]);
	values[7] = CStringGetTextDatum(QsJobStateName(r->state));
	values[8] = Int32GetDatum(r->preemptions);
	values[9] = Int64GetDatum(r->preempted);
	values[10] = Float8GetDatum(r->held);
	values[11] = Float8GetDatum(r->lost);
	nulls[12] = true;
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/* EmitCells puts the rows of what each share borrowed of each unit. */
static void
EmitCells(ReturnSetInfo *rsinfo, const char *scenario, const Scenario *sc,
		  const QsReplayOutput *out)
{
	for (int s = 0; s < sc->cfg.nshares; s++)
		for (int u = 0; u < sc->cfg.nunits; u++)
		{
			Datum		values[13] = {0};
			bool		nulls[13];

			memset(nulls, true, sizeof(nulls));
			values[0] = CStringGetTextDatum(scenario);
			values[2] = CStringGetTextDatum(sc->cfg.shares[s].name);
			values[3] = CStringGetTextDatum(sc->cfg.units[u].name);
			values[12] = Float8GetDatum(out->borrowed[s * sc->cfg.nunits + u]);
			nulls[0] = nulls[2] = nulls[3] = nulls[12] = false;
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
}

/* RunScenario replays one scenario and emits its rows. */
static void
RunScenario(ReturnSetInfo *rsinfo, const char *scenario, const Scenario *sc,
			TimestampTz from, TimestampTz to)
{
	ReplayContexts cx;
	QsReplayMemory mem = {KeepAlloc, PassAlloc, PassReset, &cx};
	QsReplayOutput out;

	cx.keep = AllocSetContextCreate(CurrentMemoryContext, "quota_sched replay",
									ALLOCSET_DEFAULT_SIZES);
	cx.pass = AllocSetContextCreate(cx.keep, "quota_sched replay pass", ALLOCSET_DEFAULT_SIZES);
	QsReplay(&sc->cfg, sc->njobs, sc->jobs, from, to, &mem, &out);
	elog(DEBUG1, "quota_sched replay %s: %d jobs, " INT64_FORMAT " passes, " INT64_FORMAT
		 " dispatches", scenario, sc->njobs, out.passes, out.dispatches);
	for (int i = 0; i < sc->njobs; i++)
		EmitJob(rsinfo, scenario, sc, i, &out.jobs[i]);
	EmitCells(rsinfo, scenario, sc, &out);
	MemoryContextDelete(cx.keep);
}

/*
 * The arguments of a replay, checked: none null, a range of at most
 * QS_REPLAY_MAX_DAYS, changes a JSON object (the tables check the rest),
 * and a queue that exists (with SPI connected).
 */
static void
CheckArguments(FunctionCallInfo fcinfo)
{
	static const char *const names[] = {"job_queue", "from", "to", "changes"};
	TimestampTz from,
				to;
	Jsonb	   *changes;
	QsConfigRead how = {NULL, true};
	QsQueueConfig queue;
	QsEnvironmentConfig environment;

	for (int a = 0; a < 4; a++)
		if (PG_ARGISNULL(a))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s must not be null", names[a])));
	from = PG_GETARG_TIMESTAMPTZ(1);
	to = PG_GETARG_TIMESTAMPTZ(2);
	if (TIMESTAMP_NOT_FINITE(from) || TIMESTAMP_NOT_FINITE(to) || to <= from ||
		to - from > (int64) QS_REPLAY_MAX_DAYS * USECS_PER_DAY)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid range from %s to %s", pstrdup(timestamptz_to_str(from)),
						pstrdup(timestamptz_to_str(to))),
				 errdetail("A replay covers more than nothing and at most %d days.",
						   QS_REPLAY_MAX_DAYS)));
	changes = PG_GETARG_JSONB_P(3);
	if (JB_ROOT_IS_SCALAR(changes) || !JB_ROOT_IS_OBJECT(changes))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("changes must be a JSON object"),
				 errhint("Such as {\"quota_share\": {\"nlp\": {\"capacity_limits\": {\"gpu\": 4}}}}.")));
	if (!QsReadQueueConfig(TextDatumGetCString(PG_GETARG_DATUM(0)), how, &queue, &environment,
						   NULL))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("job queue \"%s\" does not exist",
						QsShortValue(TextDatumGetCString(PG_GETARG_DATUM(0))))));
}

/*
 * qs_replay_check(job_queue, from, to, changes): the checks of a replay's
 * arguments, for replay() and replay_jobs() to make before anything else.
 */
Datum
qs_replay_check(PG_FUNCTION_ARGS)
{
	QsSavedUser saved;

	QsCheckSchemaVersion();
	QsBecomeOwner(QsExtensionOwner(), &saved);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "quota_sched: SPI_connect failed");
	CheckArguments(fcinfo);
	SPI_finish();
	QsRestoreUser(&saved);
	PG_RETURN_VOID();
}

/*
 * qs_replay_run(job_queue, from, to, changes) RETURNS TABLE (scenario,
 * job_id, quota_share, capacity_unit, arrival, first_dispatch, ended_at,
 * state, preemptions, preempted, held_seconds, lost_seconds,
 * borrowed_seconds): the rows of the baseline and of the candidate.
 */
Datum
qs_replay_run(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *queue;
	TimestampTz from,
				to;
	QsSavedUser saved;
	Workload	w;
	Scenario	baseline,
				candidate;

	QsCheckSchemaVersion();
	InitMaterializedSRF(fcinfo, 0);
	QsBecomeOwner(QsExtensionOwner(), &saved);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "quota_sched: SPI_connect failed");
	CheckArguments(fcinfo);
	queue = text_to_cstring(PG_GETARG_TEXT_PP(0));
	from = PG_GETARG_TIMESTAMPTZ(1);
	to = PG_GETARG_TIMESTAMPTZ(2);
	w = ReadWorkload(queue, from, to);
	LoadScenario(&baseline, queue, &w, CurrentMemoryContext);
	LoadCandidate(&candidate, queue, PG_GETARG_DATUM(3), &w, CurrentMemoryContext);
	RunScenario(rsinfo, "baseline", &baseline, from, to);
	RunScenario(rsinfo, "candidate", &candidate, from, to);
	SPI_finish();
	QsRestoreUser(&saved);
	return (Datum) 0;
}

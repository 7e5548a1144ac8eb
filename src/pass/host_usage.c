/*-------------------------------------------------------------------------
 *
 * host_usage.c
 *		The counters of what the hosts hold (scheduling.md 3.13; issue 39,
 *		item 6): per queue, unit and agent, the instances held by the parts
 *		(part_agents, part_instances) of SCHEDULED, STARTING and RUNNING
 *		jobs, and those of them whose stop is pending, in
 *		quota_sched.host_held and host_held_change, so that a pass reads
 *		what changed instead of the parts of every holding job.
 *
 * The job_usage row trigger (usage.c) gives each version of a job it
 * tallies to QsHostTallyJob, which adds its parts to a tally in memory; a
 * job with no part_agents adds nothing, at the cost of one null test.  The
 * job_usage_flush statement trigger writes the tally (QsHostTallyWrite)
 * as rows of host_held_change, which a pass folds into host_held
 * (host_cache.c); writers only insert, so a pass never waits for a row of
 * these counters that another transaction holds.  The tally lives, as usage.c's,
 * in TopTransactionContext, per (sub)transaction nesting level; a hash
 * table, since one statement (a pass that dispatches many jobs) may touch
 * every host.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/tupdesc.h"
#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "constants.h"
#include "host_usage.h"
#include "query.h"

/* room for a valid name and its terminator */
#define QS_HOST_NAME_BUF (QS_MAX_NAME_LEN + 1)

typedef struct HostCellKey
{
	int			level;			/* GetCurrentTransactionNestLevel() of the tally */
	char		queue[QS_HOST_NAME_BUF];
	char		unit[QS_HOST_NAME_BUF];
	char		agent[QS_HOST_NAME_BUF];
} HostCellKey;

typedef struct HostCell
{
	HostCellKey key;
	int64		instances;
	int64		stopping_instances;
} HostCell;

/* The tally since the last flush, in TopTransactionContext; NULL: none. */
static HTAB *HostTally = NULL;

/*
 * QsHostTallyReset forgets the tally, at transaction end (its memory goes
 * with the transaction's).
 */
void
QsHostTallyReset(void)
{
	HostTally = NULL;
}

/*
 * PartAttnums finds the attribute numbers of part_agents and
 * part_instances in the job table's descriptor, cached as JobAttnum caches
 * the others.
 */
static void
PartAttnums(TupleDesc desc, AttrNumber *agents, AttrNumber *instances)
{
	static Oid	cached_type = InvalidOid;
	static int	cached_natts = 0;
	static AttrNumber cached[2];

	if (desc->tdtypeid != cached_type || desc->natts != cached_natts)
	{
		cached[0] = cached[1] = InvalidAttrNumber;
		for (int i = 0; i < desc->natts; i++)
		{
			Form_pg_attribute att = TupleDescAttr(desc, i);

			if (att->attisdropped)
				continue;
			if (strcmp(NameStr(att->attname), "part_agents") == 0)
				cached[0] = att->attnum;
			else if (strcmp(NameStr(att->attname), "part_instances") == 0)
				cached[1] = att->attnum;
		}
		if (cached[0] == InvalidAttrNumber || cached[1] == InvalidAttrNumber)
			elog(ERROR, "quota_sched.job has no column part_agents or part_instances");
		cached_type = desc->tdtypeid;
		cached_natts = desc->natts;
	}
	*agents = cached[0];
	*instances = cached[1];
}

/*
 * CellOf returns the tally of (queue, unit, agent) at the current nesting
 * level, adding it.
 */
static HostCell *
CellOf(const char *queue, const char *unit, const char *agent, int level)
{
	HostCellKey key;
	HostCell   *cell;
	bool		found;

	if (strlen(queue) >= QS_HOST_NAME_BUF || strlen(unit) >= QS_HOST_NAME_BUF ||
		strlen(agent) >= QS_HOST_NAME_BUF)
		ereport(ERROR,
				(errcode(ERRCODE_NAME_TOO_LONG),
				 errmsg("quota_sched: a job's queue, unit or part agent is longer than %d bytes",
						QS_MAX_NAME_LEN)));
	if (HostTally == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(HostCellKey);
		ctl.entrysize = sizeof(HostCell);
		ctl.hcxt = TopTransactionContext;
		HostTally = hash_create("quota_sched host tally", 64, &ctl,
								HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	memset(&key, 0, sizeof(key));
	key.level = level;
	strlcpy(key.queue, queue, QS_HOST_NAME_BUF);
	strlcpy(key.unit, unit, QS_HOST_NAME_BUF);
	strlcpy(key.agent, agent, QS_HOST_NAME_BUF);
	cell = hash_search(HostTally, &key, HASH_ENTER, &found);
	if (!found)
		cell->instances = cell->stopping_instances = 0;
	return cell;
}

/*
 * QsHostTallyJob adds (sign +1) or takes away (-1) what the parts of one
 * version of a holding job hold on their hosts (stopping: its stop is
 * pending).  A job with no part_agents holds nothing here.
 */
void
QsHostTallyJob(HeapTuple tuple, TupleDesc desc, const char *queue, const char *unit,
			   bool stopping, int sign, int level)
{
	AttrNumber	agents_att,
				instances_att;
	bool		isnull;
	Datum		agents;
	Datum		instances;
	Datum	   *names;
	Datum	   *counts;
	int			n,
				m;

	PartAttnums(desc, &agents_att, &instances_att);
	agents = heap_getattr(tuple, agents_att, desc, &isnull);
	if (isnull)
		return;
	instances = heap_getattr(tuple, instances_att, desc, &isnull);
	if (isnull)
		return;
	deconstruct_array(DatumGetArrayTypeP(agents), TEXTOID, -1, false, TYPALIGN_INT,
					  &names, NULL, &n);
	deconstruct_array(DatumGetArrayTypeP(instances), INT4OID, 4, true, TYPALIGN_INT,
					  &counts, NULL, &m);
	for (int i = 0; i < n && i < m; i++)
	{
		HostCell   *cell = CellOf(queue, unit, TextDatumGetCString(names[i]), level);
		int64		count = DatumGetInt32(counts[i]);

		cell->instances += sign * count;
		if (stopping)
			cell->stopping_instances += sign * count;
	}
}

/*
 * QsHostTallyAny tells whether a tally made at nesting level `level` or
 * deeper is to be written.
 */
bool
QsHostTallyAny(int level)
{
	HASH_SEQ_STATUS seq;
	HostCell   *cell;

	if (HostTally == NULL)
		return false;
	hash_seq_init(&seq, HostTally);
	while ((cell = hash_seq_search(&seq)) != NULL)
		if (cell->key.level >= level && (cell->instances != 0 || cell->stopping_instances != 0))
		{
			hash_seq_term(&seq);
			return true;
		}
	return false;
}

/*
 * QsHostTallyForget forgets the tallies made at nesting level `level` or
 * deeper (written, or undone by a subtransaction's abort).
 */
void
QsHostTallyForget(int level)
{
	HASH_SEQ_STATUS seq;
	HostCell   *cell;

	if (HostTally == NULL)
		return;
	hash_seq_init(&seq, HostTally);
	while ((cell = hash_seq_search(&seq)) != NULL)
		if (cell->key.level >= level)
			hash_search(HostTally, &cell->key, HASH_REMOVE, NULL);
}

/*
 * QsHostTallyCheck refuses to commit with a tally left unwritten: the
 * counters would no longer match the parts.
 */
void
QsHostTallyCheck(void)
{
	HASH_SEQ_STATUS seq;
	HostCell   *cell;

	if (HostTally == NULL)
		return;
	hash_seq_init(&seq, HostTally);
	while ((cell = hash_seq_search(&seq)) != NULL)
		if (cell->instances != 0 || cell->stopping_instances != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("quota_sched: a change of what a host holds was not written"),
					 errdetail("Job queue \"%s\", capacity unit \"%s\", agent \"%s\".",
							   cell->key.queue, cell->key.unit, cell->key.agent)));
}

/*
 * Adds the tallies to the changes of the counters (host_held_change), a
 * row of a new generation per queue, unit and agent: only inserts, so
 * that no writer waits for another, nor for a pass.
 */
static QsQuery HostAddQuery = {
	"INSERT INTO quota_sched.host_held_change"
	"   (job_queue, generation, capacity_unit, agent, instances, stopping_instances)"
	" SELECT q, nextval('quota_sched.host_held_change_seq'), u, a, sum(i)::int8, sum(st)::int8"
	"   FROM unnest($1::text[], $2::text[], $3::text[], $4::int8[], $5::int8[])"
	"        AS t(q, u, a, i, st)"
	"  GROUP BY q, u, a",
	5, {TEXTARRAYOID, TEXTARRAYOID, TEXTARRAYOID, INT8ARRAYOID, INT8ARRAYOID},
	SPI_OK_INSERT
};

/*
 * QsHostTallyWrite adds the tallies made at nesting level `level` or
 * deeper to the changes of their counters (those of one counter made at
 * several levels added together first).  The caller is connected to SPI,
 * as the owner.
 */
void
QsHostTallyWrite(int level)
{
	QsArray		cols[5];
	Oid			types[5] = {TEXTOID, TEXTOID, TEXTOID, INT8OID, INT8OID};
	Datum		args[5];
	HASH_SEQ_STATUS seq;
	HostCell   *cell;

	if (HostTally == NULL)
		return;
	for (int c = 0; c < 5; c++)
		QsArrayInit(&cols[c], types[c], (int) hash_get_num_entries(HostTally));
	hash_seq_init(&seq, HostTally);
	while ((cell = hash_seq_search(&seq)) != NULL)
	{
		if (cell->key.level < level || (cell->instances == 0 && cell->stopping_instances == 0))
			continue;
		QsArrayPush(&cols[0], CStringGetTextDatum(cell->key.queue), false);
		QsArrayPush(&cols[1], CStringGetTextDatum(cell->key.unit), false);
		QsArrayPush(&cols[2], CStringGetTextDatum(cell->key.agent), false);
		QsArrayPush(&cols[3], Int64GetDatum(cell->instances), false);
		QsArrayPush(&cols[4], Int64GetDatum(cell->stopping_instances), false);
	}
	if (cols[0].n == 0)
		return;
	for (int c = 0; c < 5; c++)
		args[c] = QsArrayDatum(&cols[c]);
	QsQueryRun(&HostAddQuery, args, NULL, false, 0);
}

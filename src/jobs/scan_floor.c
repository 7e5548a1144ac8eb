/*-------------------------------------------------------------------------
 *
 * scan_floor.c
 *		Floors of the ordered scans that passes and claims repeat (issue
 *		42, item 5; doc/operations.md "Long transactions and autovacuum").
 *
 * Why.  A pass walks the RUNNABLE jobs of each share and unit along
 * job_runnable_share_order (to list the pairs that have some, and to read
 * their heads), the lapsed leases and the unclaimed jobs; a claim walks
 * the unclaimed jobs along job_claimable.  Each walk started at the start
 * of its range.  While a long transaction holds back the xmin horizon,
 * the index entries of the row versions that left those sets can be
 * neither removed nor marked dead, and each walk visited them all, with
 * the heap: every pass and claim walked over every job dispatched or
 * claimed since the snapshot began, and the stream fell to a fifth of its
 * rate in ten minutes.
 *
 * What.  A floor per scan (QsFloorKind) of a queue (and unit, or share and
 * unit), kept in shared memory: a key no visible row of the scan is
 * below.  A reader starts at the floor: it probes for the first row at or
 * above it in its snapshot, raises the floor to that row's key (or past
 * every key, when there is none), and scans from there.  For the RUNNABLE
 * jobs, a marker per queue (PAIRS) says that the floors of its pairs are
 * every pair that may have RUNNABLE jobs: a pass then lists them by
 * probing each from its floor, not by a loose scan of the index
 * (QsFloorReadPairs, QsFloorProbePairs; in the pass's snapshot the probe
 * is its read of the pairs' first jobs, job_store_pass.c).
 *
 * Why it is exact.  A row enters a scan's set only through a write of
 * quota_sched.job: an UPDATE, whose trigger job_scan_floor notes it
 * (FloorNoteRow; ENABLE ALWAYS, so that writes with
 * session_replication_role = replica, a repair's, are noted too), or a
 * submission, which the history's trigger notes (QsFloorNoteSubmitted).  At its commit, once it is
 * visible, the transaction lowers each floor concerned to the least key it
 * moved in (making the floor of a new pair), and counts the lowering in
 * the floor's generation, keeping the key in a ring of the last
 * QS_FLOOR_RING.  A reader reads the generation before its snapshot; when
 * it raises the floor it takes the least of the key it found and of the
 * keys lowered since it read (which its snapshot may not have seen), and
 * gives up if the ring no longer holds them all.  Rows a transaction moved
 * in are below no floor for its own reads until it commits: it starts from
 * the beginning.  A row that leaves a set never lowers a floor, and a
 * transaction that rolls back leaves its rows where they were, visible to
 * every probe (a probe does not skip locked rows).  Between a commit and
 * its lowering, a reader may miss its rows, as if they had come a moment
 * later: the lowering comes before the commit's wake-ups of the worker and
 * the agents (quota_sched.c), and a pass holds its queue's lock through
 * it, so the claims that wait for the pass see what it dispatched.
 *
 * A transaction that moved rows out of a pair (an UPDATE or DELETE of a
 * RUNNABLE job in share order, noted as not in; or a TRUNCATE) reads the
 * pair's floors as its own too: its reads do not see those rows, which a
 * rollback brings back, so it must not raise the floors past them.
 *
 * The touches.  Every write of a pair's RUNNABLE jobs in share order is
 * noted (moved in, or out, whatever it changed), and counted in the pair's
 * entry at its commit twice: touch_begun before the commit is visible
 * (PRE_COMMIT), touch_done after it or its abort; a TRUNCATE of the jobs
 * likewise in wipe_begun and wipe_done.  What a reader read of a pair in
 * a snapshot taken when the two were equal is what a later snapshot
 * reads, if touch_begun and wipe_begun read after the later snapshot are
 * as they were (QsFloorTouches; the first jobs a pass keeps:
 * heads_cache.c).  A PREPARE counts its touches begun, never done: its
 * COMMIT PREPARED may come from any session.
 *
 * What it cannot see.  Writes with every trigger disabled (ALTER TABLE
 * ... DISABLE TRIGGER ALL), rows inserted with the triggers off (a
 * restore), those of the extension's own scripts (they
 * run on the schema of an older version), and a prepared transaction
 * committed by another session move rows in unnoted: a reader starts
 * from the beginning when its floor (for the RUNNABLE jobs, the marker)
 * has not been checked so for QS_FLOOR_CHECK_MS, so such a row waits
 * that long at most.  When the table of floors is full, scans start at
 * the beginning.  Without the library preloaded there is no shared memory
 * and every scan starts from the beginning, as before.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "constants.h"
#include "identity.h"
#include "job_columns.h"
#include "query.h"
#include "scan_floor.h"
#include "words.h"

#define QS_FLOOR_ENTRIES 8192	/* floors at most (FloorsFull) */
#define QS_FLOOR_RING 16
/*
 * How often a floor is checked from the start of its index (what no trigger
 * noted): a check walks what a long transaction keeps, so not too often.
 */
#define QS_FLOOR_CHECK_MS 10000

typedef struct FloorKey
{
	Oid			dboid;
	int32		kind;
	char		queue[QS_MAX_NAME_LEN + 1];
	char		share[QS_MAX_NAME_LEN + 1];
	char		unit[QS_MAX_NAME_LEN + 1];
} FloorKey;

typedef struct FloorEntry
{
	FloorKey	key;
	bool		set;			/* false: no floor yet */
	QsFloorKeyValue floor;
	TimestampTz checked_at;		/* when a reader last started at 0 */
	uint64		gen;			/* lowerings so far */
	QsFloorKeyValue ring[QS_FLOOR_RING];	/* lowering g at [g % RING] */
	/*
	 * The floors of RUNNABLE jobs of a queue, a list from its PAIRS entry:
	 * its first, then each one's next (entries never move nor go).
	 */
	struct FloorEntry *next_pair;
	/*
	 * What the last committed run of the misconfiguration check that
	 * covered it saw (QsFloorMisfitSame): of a pair, its gen + 1 before that
	 * pass's snapshot; of a queue's PAIRS, the signature of the limits it
	 * checked; 0: none.
	 */
	uint64		misfit;
	/*
	 * Of a pair: the commits of transactions that wrote its RUNNABLE jobs in
	 * share order (moved one in, out, or changed it), counted twice:
	 * touch_begun before the commit is visible, touch_done after it (or
	 * after its abort).  Equal: no such commit is under way (QsFloorTouches).
	 */
	uint64		touch_begun;
	uint64		touch_done;
} FloorEntry;

/* The shared memory besides the table: whether it ever was full. */
typedef struct FloorShared
{
	LWLock	   *lock;
	bool		full;			/* an entry could not be made: every queue's
								 * set of RUNNABLE pairs may lack one */
	uint64		wipe_begun;		/* TRUNCATEs of the jobs, as touch_begun */
	uint64		wipe_done;
} FloorShared;

static FloorShared *floor_shared = NULL;
static LWLock *floor_lock = NULL;
static HTAB *floors = NULL;
/*
 * A floor the transaction moved rows into (in), and the least key it moved
 * in; or, of a pair, only one whose rows it moved out or changed.
 */
typedef struct PendingNote
{
	FloorKey	key;
	QsFloorKeyValue least;		/* top: none moved in */
	bool		in;
	FloorEntry *begun;			/* its entry, once touch_begun counted it */
} PendingNote;

static List *pending = NIL;		/* of PendingNote, in TopTransactionContext */
static PendingNote *last_note = NULL;	/* the one noted last */
/* the transaction truncated the jobs (wiped); and counted it in wipe_begun */
static bool pending_wipe = false;
static bool wipe_begun = false;
static bool pending_touch = false;	/* a note of a pair (BeginTouches) */

/* A value of FloorEntry.misfit for the commit (QsFloorMisfitNote). */
typedef struct PendingMisfit
{
	FloorEntry *entry;
	uint64		misfit;
	int			level;			/* GetCurrentTransactionNestLevel() of the note */
} PendingMisfit;

static List *pending_misfit = NIL;	/* of PendingMisfit, in TopTransactionContext */

/* A floor to raise at the commit, as a probe would (QsFloorAdvanceAtCommit). */
typedef struct PendingAdvance
{
	FloorKey	key;
	QsFloorSeen seen;
	QsFloorKeyValue first;
	int			level;			/* GetCurrentTransactionNestLevel() of the note */
} PendingAdvance;

static List *pending_advance = NIL; /* of PendingAdvance, in TopTransactionContext */

static PendingNote *FindPending(int32 kind, const char *queue, const char *share,
								const char *unit);
static bool MovedIn(const FloorKey *key);
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

const QsFloorKeyValue QsFloorTop = {{PG_INT64_MAX, PG_INT64_MAX, PG_INT64_MAX}};

static void
FloorShmemRequest(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(add_size(hash_estimate_size(QS_FLOOR_ENTRIES, sizeof(FloorEntry)),
									MAXALIGN(sizeof(FloorShared))));
	RequestNamedLWLockTranche("quota_sched scan floors", 1);
}

static void
FloorShmemStartup(void)
{
	HASHCTL		ctl;
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(FloorKey);
	ctl.entrysize = sizeof(FloorEntry);
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	floors = ShmemInitHash("quota_sched scan floors", QS_FLOOR_ENTRIES, QS_FLOOR_ENTRIES,
						   &ctl, HASH_ELEM | HASH_BLOBS);
	floor_shared = ShmemInitStruct("quota_sched scan floors state", sizeof(FloorShared), &found);
	if (!found)
	{
		floor_shared->lock = &(GetNamedLWLockTranche("quota_sched scan floors"))->lock;
		floor_shared->full = false;
		floor_shared->wipe_begun = floor_shared->wipe_done = 0;
	}
	floor_lock = floor_shared->lock;
	LWLockRelease(AddinShmemInitLock);
}

/* QsScanFloorRegister sets up the floors' shared memory, when preloaded. */
void
QsScanFloorRegister(void)
{
	if (!process_shared_preload_libraries_in_progress)
		return;
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = FloorShmemRequest;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = FloorShmemStartup;
}

static FloorKey
MakeKey(QsFloorKind kind, const char *queue, const char *share, const char *unit)
{
	FloorKey	key;

	memset(&key, 0, sizeof(key));
	key.dboid = MyDatabaseId;
	key.kind = kind;
	strlcpy(key.queue, queue, sizeof(key.queue));
	strlcpy(key.share, share, sizeof(key.share));
	strlcpy(key.unit, unit, sizeof(key.unit));
	return key;
}

/* QsFloorKeyLess: whether key a comes before key b in their index's order */
bool
QsFloorKeyLess(QsFloorKeyValue a, QsFloorKeyValue b)
{
	for (int i = 0; i < 3; i++)
		if (a.k[i] != b.k[i])
			return a.k[i] < b.k[i];
	return false;
}

/*
 * EnterFloor finds or makes a floor's entry (a new one has none set), with
 * the lock held exclusively; NULL when the table is full, which is then
 * remembered (FloorsFull).
 */
static FloorEntry *
EnterFloor(const FloorKey *key)
{
	bool		found;
	FloorEntry *entry = hash_search(floors, key, HASH_ENTER_NULL, &found);

	if (entry == NULL)
		floor_shared->full = true;
	else if (!found)
	{
		entry->set = false;
		entry->gen = 0;
		entry->checked_at = 0;
		entry->next_pair = NULL;
		entry->misfit = 0;
		entry->touch_begun = entry->touch_done = 0;
		if (key->kind == QS_FLOOR_RUNNABLE)
		{
			/* into its queue's list (none when full: then no marker is valid) */
			FloorKey	marker = MakeKey(QS_FLOOR_PAIRS, key->queue, "", "");
			FloorEntry *head;

			marker.dboid = key->dboid;
			head = EnterFloor(&marker);
			if (head != NULL)
			{
				entry->next_pair = head->next_pair;
				head->next_pair = entry;
			}
		}
	}
	return entry;
}

/*
 * QsFloorRead reads a scan's floor, before the reader's snapshot: valid
 * when it is set, was checked from the beginning less than
 * QS_FLOOR_CHECK_MS ago, and this transaction moved no row into the scan
 * (own) and reads in snapshots of its own (READ COMMITTED; else own too).
 */
static QsFloorSeen
ReadKey(const FloorKey *key)
{
	QsFloorSeen seen = {false, false, 0, {{0, 0, 0}}};
	FloorEntry *entry;

	if (floors == NULL)
		return seen;
	/* a snapshot of the transaction's may be older than the floor */
	seen.own = IsolationUsesXactSnapshot() || MovedIn(key);
	LWLockAcquire(floor_lock, LW_SHARED);
	entry = hash_search(floors, key, HASH_FIND, NULL);
	if (entry != NULL)
	{
		seen.gen = entry->gen;
		seen.floor = entry->floor;
		seen.valid = entry->set && !seen.own &&
			!TimestampDifferenceExceeds(entry->checked_at, GetCurrentTimestamp(),
										QS_FLOOR_CHECK_MS);
	}
	LWLockRelease(floor_lock);
	return seen;
}

QsFloorSeen
QsFloorRead(QsFloorKind kind, const char *queue, const char *unit)
{
	FloorKey	key = MakeKey(kind, queue, "", unit);

	return ReadKey(&key);
}

/*
 * FloorAdvance raises a floor after a probe that started where seen says
 * and found first (QsFloorTop: nothing): to the least of first and of the
 * keys lowered since seen was read; a probe from the beginning sets it so.
 * Nothing when the ring lost some of those keys, or for a transaction that
 * moved rows in itself.
 */
static void
FloorAdvance(const FloorKey *key, const QsFloorSeen *seen, QsFloorKeyValue first)
{
	FloorEntry *entry;

	if (floors == NULL || seen->own)
		return;
	LWLockAcquire(floor_lock, LW_EXCLUSIVE);
	entry = EnterFloor(key);
	if (entry != NULL && entry->gen - seen->gen <= QS_FLOOR_RING)
	{
		for (uint64 g = seen->gen + 1; g <= entry->gen; g++)
			if (QsFloorKeyLess(entry->ring[g % QS_FLOOR_RING], first))
				first = entry->ring[g % QS_FLOOR_RING];
		if (!seen->valid)
		{
			entry->floor = first;
			entry->set = true;
			entry->checked_at = GetCurrentTimestamp();
		}
		else if (entry->set && QsFloorKeyLess(entry->floor, first))
			entry->floor = first;
	}
	LWLockRelease(floor_lock);
}

/*
 * FindPending finds what the transaction noted of a floor: a list, short
 * (a few floors a transaction, whatever its rows), cheaper to walk than a
 * table is to make at each transaction; the note found last first (a
 * statement's rows are often of one pair).
 */
static PendingNote *
FindPending(int32 kind, const char *queue, const char *share, const char *unit)
{
	ListCell   *lc;

#define NOTE_IS(p) ((p)->key.kind == kind && strcmp((p)->key.queue, queue) == 0 && \
					strcmp((p)->key.share, share) == 0 && strcmp((p)->key.unit, unit) == 0)
	if (last_note != NULL && NOTE_IS(last_note))
		return last_note;
	foreach(lc, pending)
	{
		PendingNote *p = lfirst(lc);

		if (NOTE_IS(p))
			return last_note = p;
	}
#undef NOTE_IS
	return NULL;
}

/* MovedIn tells whether the transaction moved rows into a floor's scan. */
static bool
MovedIn(const FloorKey *key)
{
	PendingNote *p = FindPending(key->kind, key->queue, key->share, key->unit);

	return p != NULL && p->in;
}

/*
 * Note notes that the transaction moved a row of key value into a scan
 * (in), or, of a pair, moved one out or changed it (not in: value is
 * ignored).
 */
static void
Note(QsFloorKind kind, const char *queue, const char *share, const char *unit,
	 QsFloorKeyValue value, bool in)
{
	PendingNote *p = FindPending(kind, queue, share, unit);

	if (p == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);

		p = palloc(sizeof(PendingNote));
		p->key = MakeKey(kind, queue, share, unit);
		p->least = QsFloorTop;
		p->in = false;
		p->begun = NULL;
		pending = lappend(pending, p);
		last_note = p;
		pending_touch |= kind == QS_FLOOR_RUNNABLE;
		MemoryContextSwitchTo(old);
	}
	if (in)
	{
		p->in = true;
		if (QsFloorKeyLess(value, p->least))
			p->least = value;
	}
}

static char *
TextColumn(TupleDesc desc, HeapTuple row, JobColumn c)
{
	bool		isnull;
	Datum		d = heap_getattr(row, JobAttnum(desc, c), desc, &isnull);

	return isnull ? NULL : TextDatumGetCString(d);
}

static int64
Int64Column(TupleDesc desc, HeapTuple row, JobColumn c, bool *isnull)
{
	return DatumGetInt64(heap_getattr(row, JobAttnum(desc, c), desc, isnull));
}

/* PartAgentsNull tells whether the row is placed on no agent. */
static bool
PartAgentsNull(TupleDesc desc, HeapTuple row)
{
	static const char *const names[] = {"part_agents"};
	static Oid	cached_type = InvalidOid;
	static int	cached_natts = 0;
	static AttrNumber attnum;

	if (desc->tdtypeid != cached_type || desc->natts != cached_natts)
	{
		QsAttnums(desc, "job", names, 1, &attnum);
		cached_type = desc->tdtypeid;
		cached_natts = desc->natts;
	}
	return heap_attisnull(row, attnum, desc);
}

/*
 * NoteRunnable notes a RUNNABLE job that is in its share's order (waits for
 * no dependency): in the floor of its share and unit, by (-priority,
 * queued_at, id), the order of job_runnable_share_order; moved in (a new
 * row version), or out (in false: an old one, which an UPDATE or DELETE
 * replaces, whatever it changed).
 */
static void
NoteRunnable(TupleDesc desc, HeapTuple row, const char *queue, bool in)
{
	bool		isnull;
	QsFloorKeyValue value;

	if (!heap_attisnull(row, JobAttnum(desc, JC_DEPENDENCIES_WAITING), desc))
		return;
	value = QsFloorJobKey(DatumGetInt32(heap_getattr(row, JobAttnum(desc, JC_PRIORITY), desc,
													 &isnull)),
						  Int64Column(desc, row, JC_QUEUED_AT, &isnull),
						  Int64Column(desc, row, JC_ID, &isnull));
	Note(QS_FLOOR_RUNNABLE, queue, TextColumn(desc, row, JC_QUOTA_SHARE),
		 TextColumn(desc, row, JC_CAPACITY_UNIT), value, in);
}

/*
 * NoteLeft notes, of a job's row version that an UPDATE or DELETE
 * replaces, the pair whose RUNNABLE jobs in share order it was one of.
 */
static void
NoteLeft(TupleDesc desc, HeapTuple old)
{
	char	   *name;

	if (floors != NULL && (name = TextColumn(desc, old, JC_STATE)) != NULL &&
		strcmp(name, QsJobStateName(QS_RUNNABLE)) == 0)
		NoteRunnable(desc, old, TextColumn(desc, old, JC_JOB_QUEUE), false);
}

/*
 * FloorNoteRow notes, for the commit, the scans a job's new row version
 * is in.
 */
static void
FloorNoteRow(TupleDesc desc, HeapTuple row)
{
	char	   *name;
	char	   *queue;
	QsJobState	state;
	bool		isnull;
	QsFloorKeyValue value = {{0, 0, 0}};

	if (floors == NULL || (name = TextColumn(desc, row, JC_STATE)) == NULL ||
		!QsJobStateFromName(name, &state))
		return;
	queue = TextColumn(desc, row, JC_JOB_QUEUE);
	if (state == QS_RUNNABLE)
		NoteRunnable(desc, row, queue, true);
	else if (state != QS_SCHEDULED && state != QS_STARTING && state != QS_RUNNING)
		return;
	else if (!heap_attisnull(row, JobAttnum(desc, JC_AGENT), desc))
	{
		value.k[0] = Int64Column(desc, row, JC_LEASE_UNTIL, &isnull);
		if (!isnull)
			Note(QS_FLOOR_LAPSED, queue, "", "", value, true);
	}
	else if (state == QS_SCHEDULED)
	{
		value.k[0] = Int64Column(desc, row, JC_SCHEDULED_AT, &isnull);
		value.k[1] = Int64Column(desc, row, JC_ID, &isnull);
		Note(QS_FLOOR_UNCLAIMED, queue, "", "", value, true);
		if (PartAgentsNull(desc, row))
		{
			Note(QS_FLOOR_CLAIMABLE, queue, "", "", value, true);
			Note(QS_FLOOR_CLAIMABLE, queue, "", TextColumn(desc, row, JC_CAPACITY_UNIT), value,
				 true);
		}
	}
}

/*
 * QsFloorNoteSubmitted notes a job a submission stored (from the trigger
 * job_history_insert, which runs for each anyway: no trigger call more on
 * the submit path; job_scan_floor notes updates).
 */
void
QsFloorNoteSubmitted(TupleDesc desc, HeapTuple row)
{
	FloorNoteRow(desc, row);
}

PG_FUNCTION_INFO_V1(qs_job_scan_floor);

/*
 * qs_job_scan_floor, the triggers job_scan_floor (BEFORE UPDATE, for each
 * row), job_scan_floor_delete (BEFORE DELETE, for each row) and
 * job_scan_floor_truncate (AFTER TRUNCATE), each ENABLE ALWAYS, notes for
 * the commit the scans a job's new row version is in, and the pair whose
 * RUNNABLE jobs its old one was one of (or, at a TRUNCATE, every pair).
 * Nothing while an extension script runs.
 */
Datum
qs_job_scan_floor(PG_FUNCTION_ARGS)
{
	TriggerData *td = (TriggerData *) fcinfo->context;
	TupleDesc	desc;

	QsCheckSchemaVersion();
	if (CALLED_AS_TRIGGER(fcinfo) && TRIGGER_FIRED_BY_TRUNCATE(td->tg_event))
	{
		pending_wipe |= !creating_extension && floors != NULL;
		return PointerGetDatum(NULL);
	}
	td = CheckJobTrigger(fcinfo, "job_scan_floor", true);
	desc = RelationGetDescr(td->tg_relation);
	if (!TRIGGER_FIRED_BY_UPDATE(td->tg_event) && !TRIGGER_FIRED_BY_DELETE(td->tg_event))
		elog(ERROR, "quota_sched: job_scan_floor must be fired by UPDATE, DELETE or TRUNCATE");
	if (!creating_extension)
	{
		NoteLeft(desc, td->tg_trigtuple);
		if (TRIGGER_FIRED_BY_UPDATE(td->tg_event))
			FloorNoteRow(desc, td->tg_newtuple);
	}
	return PointerGetDatum(TRIGGER_FIRED_BY_UPDATE(td->tg_event) ?
						   td->tg_newtuple : td->tg_trigtuple);
}

/*
 * BeginTouches counts, before the commit (or PREPARE) makes them visible,
 * the transaction's writes of each pair's RUNNABLE jobs (touch_begun), and
 * a TRUNCATE of the jobs (wipe_begun): a reader that finds the count where
 * it was when it kept a pair's first jobs knows that no write of them
 * became visible since (QsFloorTouches).
 */
static void
BeginTouches(void)
{
	ListCell   *lc;

	LWLockAcquire(floor_lock, LW_EXCLUSIVE);
	foreach(lc, pending)
	{
		PendingNote *p = lfirst(lc);

		if (p->key.kind != QS_FLOOR_RUNNABLE || p->begun != NULL)
			continue;
		p->begun = EnterFloor(&p->key);
		if (p->begun != NULL)
			p->begun->touch_begun++;
	}
	if (pending_wipe && !wipe_begun)
	{
		floor_shared->wipe_begun++;
		wipe_begun = true;
	}
	LWLockRelease(floor_lock);
}

/*
 * EndTouches, at the end of a transaction whose writes BeginTouches
 * counted, counts them done, once they are visible (a commit) or will
 * never be (an abort).  Not at a PREPARE: they become visible at a COMMIT
 * PREPARED, maybe in another session, that nothing counts; so the first
 * jobs of those pairs are not kept again until the server restarts.
 */
static void
EndTouches(bool commit)
{
	ListCell   *lc;

	foreach(lc, pending)
	{
		PendingNote *p = lfirst(lc);

		/* noted after the PRE_COMMIT (no write of this library's): late */
		if (commit && p->begun == NULL && p->key.kind == QS_FLOOR_RUNNABLE &&
			(p->begun = EnterFloor(&p->key)) != NULL)
			p->begun->touch_begun++;
		if (p->begun != NULL)
			p->begun->touch_done++;
	}
	if (wipe_begun)
		floor_shared->wipe_done++;
}

/*
 * Lower lowers, at the commit of the transaction that noted them (and at
 * its PREPARE), each floor to the least key it moved in, and counts the
 * lowering; at a commit, with the touches done (EndTouches).
 */
static void
Lower(bool commit)
{
	ListCell   *lc;

	LWLockAcquire(floor_lock, LW_EXCLUSIVE);
	foreach(lc, pending)
	{
		PendingNote *p = lfirst(lc);
		FloorEntry *entry;

		if (!p->in || (entry = EnterFloor(&p->key)) == NULL)
			continue;
		if (entry->set && QsFloorKeyLess(p->least, entry->floor))
			entry->floor = p->least;
		entry->gen++;
		entry->ring[entry->gen % QS_FLOOR_RING] = p->least;
	}
	if (commit)
		EndTouches(true);
	LWLockRelease(floor_lock);
}

/* SetMisfit writes, at commit, what the transaction's checks noted. */
static void
SetMisfit(void)
{
	ListCell   *lc;

	if (pending_misfit == NIL)
		return;
	LWLockAcquire(floor_lock, LW_EXCLUSIVE);
	foreach(lc, pending_misfit)
	{
		PendingMisfit *p = lfirst(lc);

		p->entry->misfit = p->misfit;
	}
	LWLockRelease(floor_lock);
}

/*
 * QsScanFloorXactEvent counts the touches before the commit (BeginTouches),
 * lowers the floors at commit (and at PREPARE: the rows become visible
 * only at COMMIT PREPARED, which QS_FLOOR_CHECK_MS bounds), counts the
 * touches of an abort done, and forgets the transaction's notes at its end.
 */
void
QsScanFloorXactEvent(XactEvent event)
{
	ListCell   *lc;

	if (pending == NIL && pending_misfit == NIL && pending_advance == NIL && !pending_wipe)
		return;
	if ((pending_touch || pending_wipe) &&
		(event == XACT_EVENT_PRE_COMMIT || event == XACT_EVENT_PRE_PREPARE))
		BeginTouches();
	if ((pending != NIL || pending_wipe) &&
		(event == XACT_EVENT_COMMIT || event == XACT_EVENT_PREPARE))
		Lower(event == XACT_EVENT_COMMIT);
	if (event == XACT_EVENT_ABORT && (pending_touch || pending_wipe))
	{
		LWLockAcquire(floor_lock, LW_EXCLUSIVE);
		EndTouches(false);
		LWLockRelease(floor_lock);
	}
	if (event == XACT_EVENT_COMMIT)
	{
		SetMisfit();
		/* after Lower: the ring then holds what this transaction moved in */
		foreach(lc, pending_advance)
		{
			PendingAdvance *a = lfirst(lc);

			FloorAdvance(&a->key, &a->seen, a->first);
		}
	}
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PREPARE || event == XACT_EVENT_PARALLEL_COMMIT ||
		event == XACT_EVENT_PARALLEL_ABORT)
	{
		pending = pending_misfit = pending_advance = NIL;
		last_note = NULL;
		pending_wipe = wipe_begun = pending_touch = false;
	}
}

/*
 * QsScanFloorSubXactAbort forgets, when a subtransaction aborts, the
 * misconfiguration checks and the raised floors noted inside it: the
 * writes they stand for are undone (the pass rolled back to a savepoint).
 * The rows noted as moved in are kept: a floor lowered for nothing costs
 * a probe, not a job.
 */
void
QsScanFloorSubXactAbort(void)
{
	int			level = GetCurrentTransactionNestLevel();
	List	   *misfit = NIL;
	List	   *advance = NIL;
	ListCell   *lc;
	MemoryContext old;

	if (pending_misfit == NIL && pending_advance == NIL)
		return;
	old = MemoryContextSwitchTo(TopTransactionContext);
	foreach(lc, pending_misfit)
		if (((PendingMisfit *) lfirst(lc))->level < level)
			misfit = lappend(misfit, lfirst(lc));
	foreach(lc, pending_advance)
		if (((PendingAdvance *) lfirst(lc))->level < level)
			advance = lappend(advance, lfirst(lc));
	MemoryContextSwitchTo(old);
	pending_misfit = misfit;
	pending_advance = advance;
}

/*
 * The probes: the first row of each scan at or above a key ($3, $4; for
 * LAPSED, $3), in the order of its index.  Their conditions are those of
 * the scans they serve: ClaimableQuery (job_store.c), the unclaimed and
 * lapsed parts of the due jobs (job_store_pass.c), and those by which
 * QsFloorNoteRow places a row.
 */
#define UNCLAIMED_PROBE(extra) \
	"SELECT scheduled_at, id FROM quota_sched.job" \
	" WHERE job_queue = $1 AND state = 'SCHEDULED' AND agent IS NULL" extra \
	"   AND (scheduled_at, id) >= ($3, $4)" \
	" ORDER BY scheduled_at, id LIMIT 1"

static QsQuery ProbeQueries[] = {
	[QS_FLOOR_CLAIMABLE] = {
		UNCLAIMED_PROBE(" AND part_agents IS NULL AND ($2::text IS NULL OR capacity_unit = $2)"),
		4, {TEXTOID, TEXTOID, TIMESTAMPTZOID, INT8OID}, SPI_OK_SELECT, QS_INDEX_WALK
	},
	[QS_FLOOR_UNCLAIMED] = {
		UNCLAIMED_PROBE(" AND $2::text IS NULL"),
		4, {TEXTOID, TEXTOID, TIMESTAMPTZOID, INT8OID}, SPI_OK_SELECT, QS_INDEX_WALK
	},
	[QS_FLOOR_LAPSED] = {
		"SELECT lease_until, 0::bigint FROM quota_sched.job"
		" WHERE job_queue = $1 AND state IN ('SCHEDULED', 'STARTING', 'RUNNING')"
		"   AND agent IS NOT NULL AND lease_until >= $3 AND $2::text IS NULL"
		"   AND $4::bigint IS NULL"
		" ORDER BY lease_until LIMIT 1",
		4, {TEXTOID, TEXTOID, TIMESTAMPTZOID, INT8OID}, SPI_OK_SELECT, QS_INDEX_WALK
	},
};

/*
 * QsFloorProbe finds, in the snapshot given (NULL: one of the statement's
 * own), the key of the first row of a scan of a queue (and unit: "" for
 * all) at or above a key, or past every key (QsFloorTop: none), locking
 * nothing and leaving the floors as they are.
 */
QsFloorKeyValue
QsFloorProbe(QsFloorKind kind, const char *queue, const char *unit, QsFloorKeyValue from,
			 Snapshot snapshot)
{
	Datum		args[4];
	char		nulls[4] = {' ', unit[0] ? ' ' : 'n', ' ', ' '};
	QsFloorKeyValue first = QsFloorTop;

	args[0] = CStringGetTextDatum(queue);
	args[1] = unit[0] ? CStringGetTextDatum(unit) : (Datum) 0;
	args[2] = Int64GetDatum(from.k[0]);
	args[3] = Int64GetDatum(from.k[1]);
	if (kind == QS_FLOOR_LAPSED)
		nulls[3] = 'n';
	if (QsQueryRunIn(&ProbeQueries[kind], args, nulls, snapshot, 1) == 1)
	{
		bool		isnull;

		first.k[0] = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1,
												 &isnull));
		first.k[1] = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2,
												 &isnull));
	}
	SPI_freetuptable(SPI_tuptable);
	return first;
}

/*
 * QsFloorStart finds where a scan of a queue (and unit: "" for all) starts,
 * in the snapshot given (NULL: one of the statement's own), which must be
 * taken after seen was read (QsFloorRead): the key of its first row at or
 * above the floor (from the beginning when the floor is not valid), or
 * past every key (QsFloorTop: the scan finds nothing); and raises the floor
 * to it.
 */
QsFloorKeyValue
QsFloorStart(QsFloorKind kind, const char *queue, const char *unit, const QsFloorSeen *seen,
			 Snapshot snapshot)
{
	QsFloorKeyValue from = {{DT_NOBEGIN, PG_INT64_MIN, 0}};
	QsFloorKeyValue first;
	FloorKey	key = MakeKey(kind, queue, "", unit);

	if (seen->valid)
		from = seen->floor;
	first = QsFloorProbe(kind, queue, unit, from, snapshot);
	FloorAdvance(&key, seen, first);
	return first;
}

/*
 * OwnRunnable tells whether this transaction wrote RUNNABLE jobs of a
 * queue in share order (moved some in or out, or changed them), or
 * truncated the jobs.
 */
static bool
OwnRunnable(const char *queue)
{
	ListCell   *lc;

	if (pending_wipe)
		return true;
	foreach(lc, pending)
	{
		PendingNote *p = lfirst(lc);

		if (p->key.kind == QS_FLOOR_RUNNABLE && strcmp(p->key.queue, queue) == 0)
			return true;
	}
	return false;
}

/* AddPair appends a share and unit's floor, as seen, to pf (not yet probed). */
static void
AddPair(QsPairFloors *pf, const char *share, const char *unit, QsFloorSeen seen, int *cap)
{
	QsPairFloor *p;

	if (pf->n == *cap)
		pf->pairs = repalloc(pf->pairs, sizeof(QsPairFloor) * (*cap *= 2));
	p = &pf->pairs[pf->n++];
	p->share = pstrdup(share);
	p->unit = pstrdup(unit);
	p->seen = seen;
	p->first = QsFloorTop;
	p->entry = NULL;
	p->touches = 0;
	p->settled = false;
}

/*
 * QsFloorReadPairs reads, before a pass's snapshot, the floors of the
 * RUNNABLE jobs of every share and unit of a queue that has one, and
 * whether they are all the pairs that may have RUNNABLE jobs: the marker
 * PAIRS, which a pass sets once it listed the pairs from the index
 * (QsFloorSetPairs), is valid for QS_FLOOR_CHECK_MS; never once the table
 * was full (a pair may lack its floor), nor for a transaction that wrote
 * RUNNABLE jobs of the queue itself (moved some in or out).  With each
 * pair, its touches before the snapshot, and whether they were settled.
 */
QsPairFloors
QsFloorReadPairs(const char *queue)
{
	QsPairFloors pf = {pstrdup(queue), {false, false, 0, {{0, 0, 0}}}, NULL, 0, NULL, NIL, 0};
	FloorKey	marker = MakeKey(QS_FLOOR_PAIRS, queue, "", "");
	int			cap = 8;
	FloorEntry *e;
	bool		settled;

	if (floors == NULL)
		return pf;
	pf.marker = ReadKey(&marker);
	pf.marker.own |= OwnRunnable(queue);
	settled = !pf.marker.own;
	pf.pairs = palloc(sizeof(QsPairFloor) * cap);
	LWLockAcquire(floor_lock, LW_SHARED);
	pf.marker.valid &= !pf.marker.own && !floor_shared->full;
	pf.wipes = floor_shared->wipe_begun;
	settled &= floor_shared->wipe_begun == floor_shared->wipe_done;
	/* the queue's list: its pairs only, whatever the other queues have */
	e = hash_search(floors, &marker, HASH_FIND, NULL);
	pf.marker_entry = e;
	for (e = e == NULL ? NULL : e->next_pair; e != NULL; e = e->next_pair)
	{
		QsFloorSeen seen = {e->set, false, e->gen, e->floor};

		seen.own = pf.marker.own;
		seen.valid &= !seen.own;
		AddPair(&pf, e->key.share, e->key.unit, seen, &cap);
		pf.pairs[pf.n - 1].entry = e;
		pf.pairs[pf.n - 1].touches = e->touch_begun;
		pf.pairs[pf.n - 1].settled = settled && e->touch_begun == e->touch_done;
	}
	LWLockRelease(floor_lock);
	return pf;
}

/*
 * QsFloorTouches reads, after the snapshot of the reads of pf, the count
 * of the commits begun that wrote the RUNNABLE jobs of its pairs which[n],
 * into touches[n] (PG_UINT64_MAX: a pair with no entry), and of the
 * TRUNCATEs of the jobs, into *wipes.  Each such commit is counted before
 * it is visible: when a pair's count and wipes are those a reader read
 * before an earlier snapshot with none under way (settled), no write of
 * the pair's jobs became visible between the two snapshots, and what the
 * earlier one read of them is what this one would (heads_cache.c).
 */
void
QsFloorTouches(const QsPairFloors *pf, const int *which, int n, uint64 *touches, uint64 *wipes)
{
	if (floors == NULL)
	{
		for (int i = 0; i < n; i++)
			touches[i] = PG_UINT64_MAX;
		*wipes = PG_UINT64_MAX;
		return;
	}
	LWLockAcquire(floor_lock, LW_SHARED);
	for (int i = 0; i < n; i++)
	{
		const FloorEntry *e = pf->pairs[which[i]].entry;

		touches[i] = e != NULL ? e->touch_begun : PG_UINT64_MAX;
	}
	*wipes = floor_shared->wipe_begun;
	LWLockRelease(floor_lock);
}

/*
 * QsFloorSetPairs makes pf, whose marker is not valid, hold the pairs a
 * pass listed from the index (a list of share, unit, ...) besides those it
 * had, each to be probed from the beginning; probing them
 * (QsFloorProbePairs) then sets the marker.
 */
void
QsFloorSetPairs(QsPairFloors *pf, List *pairs)
{
	int			cap = Max(pf->n, 8);
	int			had = pf->n;

	if (pf->pairs == NULL)
		pf->pairs = palloc(sizeof(QsPairFloor) * cap);
	for (int i = 0; i < had; i++)
		pf->pairs[i].seen.valid = false;
	for (int i = 0; i + 1 < list_length(pairs); i += 2)
	{
		const char *share = list_nth(pairs, i);
		const char *unit = list_nth(pairs, i + 1);
		QsFloorSeen none = {false, pf->marker.own, 0, {{0, 0, 0}}};
		int			j = 0;

		while (j < had && (strcmp(pf->pairs[j].share, share) != 0 ||
						   strcmp(pf->pairs[j].unit, unit) != 0))
			j++;
		if (j == had)
			AddPair(pf, share, unit, none, &cap);
	}
}

/*
 * The first RUNNABLE job of each of several shares and units ($2, $3) in
 * share order at or after a position (its priority, $4, an int8 so that
 * the start of the order is beyond any priority; its time and id, $5 and
 * $6): of the position's priority, then of those after it, each a range
 * of job_runnable_share_order that starts at the position; in the order of
 * the pairs in that index, as the pass's loose scan lists them.
 */
static QsQuery PairsProbeQuery = {
	"SELECT p.i, f.priority, f.queued_at, f.id"
	"  FROM unnest($2::text[], $3::text[], $4::int8[], $5::timestamptz[], $6::int8[])"
	"       WITH ORDINALITY AS p(quota_share, capacity_unit, priority, queued_at, id, i)"
	" CROSS JOIN LATERAL ("
	"   SELECT * FROM (SELECT priority, queued_at, id FROM quota_sched.job"
	"     WHERE job_queue = $1 AND quota_share = p.quota_share AND capacity_unit = p.capacity_unit"
	"       AND state = 'RUNNABLE' AND dependencies_waiting IS NULL"
	"       AND priority = p.priority AND (queued_at, id) >= (p.queued_at, p.id)"
	"     ORDER BY queued_at, id LIMIT 1) same"
	"   UNION ALL"
	"   SELECT * FROM (SELECT priority, queued_at, id FROM quota_sched.job"
	"     WHERE job_queue = $1 AND quota_share = p.quota_share AND capacity_unit = p.capacity_unit"
	"       AND state = 'RUNNABLE' AND dependencies_waiting IS NULL AND priority < p.priority"
	"     ORDER BY priority DESC, queued_at, id LIMIT 1) rest"
	"   LIMIT 1) f"
	" ORDER BY p.quota_share, p.capacity_unit",
	6, {TEXTOID, TEXTARRAYOID, TEXTARRAYOID, INT8ARRAYOID, TIMESTAMPTZARRAYOID, INT8ARRAYOID},
	SPI_OK_SELECT, QS_INDEX_WALK
};

/*
 * QsFloorProbeArgs sets the arrays of a probe of pairs ($2-$6: share, unit,
 * and the key it starts at, its floor or the beginning) from the pairs to
 * probe, which[n] of pf's, as QsFloorToProbe gives them.
 */
void
QsFloorProbeArgs(const QsPairFloors *pf, const int *which, int n, Datum *args)
{
	QsArray		a[5];
	const Oid	types[5] = {TEXTOID, TEXTOID, INT8OID, TIMESTAMPTZOID, INT8OID};

	for (int c = 0; c < 5; c++)
		QsArrayInit(&a[c], types[c], n);
	for (int i = 0; i < n; i++)
	{
		const QsPairFloor *p = &pf->pairs[which[i]];
		bool		from = p->seen.valid;

		QsArrayPush(&a[0], CStringGetTextDatum(p->share), false);
		QsArrayPush(&a[1], CStringGetTextDatum(p->unit), false);
		QsArrayPush(&a[2], Int64GetDatum(from ? -p->seen.floor.k[0] : (int64) PG_INT32_MAX + 1),
					false);
		QsArrayPush(&a[3], Int64GetDatum(from ? p->seen.floor.k[1] : DT_NOBEGIN), false);
		QsArrayPush(&a[4], Int64GetDatum(from ? p->seen.floor.k[2] : 0), false);
	}
	for (int c = 0; c < 5; c++)
		args[c + 1] = QsArrayDatum(&a[c]);
}

/*
 * QsFloorToProbe returns how many of pf's pairs a probe reads, and sets
 * *which to them: those whose floor is not past every key.
 */
int
QsFloorToProbe(const QsPairFloors *pf, int **which)
{
	int			n = 0;

	*which = palloc(sizeof(int) * (pf->n + 1));
	for (int i = 0; i < pf->n; i++)
		if (!pf->pairs[i].seen.valid || !QS_FLOOR_TOP(pf->pairs[i].seen.floor))
			(*which)[n++] = i;
	return n;
}

/*
 * QsFloorFound tells pf that a probe of its pair p, in the snapshot of
 * the pass, found a job at a key: the first the probe found of a pair
 * lists it (share, unit in listed: the probe's rows come in the order of
 * the index of pairs, a pair's next to one another), and the least key of
 * each is its first.
 */
void
QsFloorFound(QsPairFloors *pf, int p, QsFloorKeyValue key)
{
	QsPairFloor *pair = &pf->pairs[p];

	if (QS_FLOOR_TOP(pair->first))
		pf->listed = lappend(lappend(pf->listed, pair->share), pair->unit);
	if (QsFloorKeyLess(key, pair->first))
		pair->first = key;
}

/*
 * QsFloorProbed raises the floors of the pairs probed, which[n], to the
 * first job found of each (QsFloorFound; none: past every key); with a
 * marker that was not valid, it then sets it: pf's pairs are every pair
 * with RUNNABLE jobs.
 */
void
QsFloorProbed(QsPairFloors *pf, const int *which, int n)
{
	for (int i = 0; i < n; i++)
	{
		QsPairFloor *p = &pf->pairs[which[i]];
		FloorKey	key;

		/* found at its floor (a probe finds nothing below it): nothing to raise */
		if (p->seen.valid && !QsFloorKeyLess(p->seen.floor, p->first))
			continue;
		key = MakeKey(QS_FLOOR_RUNNABLE, pf->queue, p->share, p->unit);
		FloorAdvance(&key, &p->seen, p->first);
	}
	if (!pf->marker.valid)
	{
		FloorKey	key = MakeKey(QS_FLOOR_PAIRS, pf->queue, "", "");

		FloorAdvance(&key, &pf->marker, QsFloorTop);
	}
}

/*
 * QsFloorAdvanceAtCommit raises, at the commit, the floor of pf's pair p
 * to first, a key no row of the pair visible in the snapshot of the reads
 * of pf is below once this transaction's writes are visible (a pass that
 * dispatched the pair's first jobs: pass_apply.c), as a probe in that
 * snapshot would (FloorAdvance, with what pf read before it): rows moved in
 * since, by others or by this transaction (Lower, first), keep it down.
 * Nothing at a PREPARE (the writes are not visible until a COMMIT
 * PREPARED, which may not come) nor at an abort.
 */
void
QsFloorAdvanceAtCommit(const QsPairFloors *pf, int p, QsFloorKeyValue first)
{
	MemoryContext old;
	PendingAdvance *a;

	if (floors == NULL || pf->pairs[p].seen.own)
		return;
	old = MemoryContextSwitchTo(TopTransactionContext);
	a = palloc(sizeof(PendingAdvance));
	a->key = MakeKey(QS_FLOOR_RUNNABLE, pf->queue, pf->pairs[p].share, pf->pairs[p].unit);
	a->seen = pf->pairs[p].seen;
	a->first = first;
	a->level = GetCurrentTransactionNestLevel();
	pending_advance = lappend(pending_advance, a);
	MemoryContextSwitchTo(old);
}

/*
 * QsFloorProbePairs finds, in the snapshot given (NULL: the statement's
 * own), which must be taken after pf was read, the first RUNNABLE job of
 * each pair of pf from its floor (none when its floor is past every key),
 * and raises the floors to them; lists those with a job in listed (share,
 * unit, ..., in index order); with a marker that was not valid, it then
 * sets it (QsFloorProbed).
 */
void
QsFloorProbePairs(QsPairFloors *pf, Snapshot snapshot)
{
	int		   *which;
	int			n = QsFloorToProbe(pf, &which);
	Datum		args[6];
	uint64		rows;

	args[0] = CStringGetTextDatum(pf->queue);
	QsFloorProbeArgs(pf, which, n, args);
	rows = n == 0 ? 0 : QsQueryRunIn(&PairsProbeQuery, args, NULL, snapshot, 0);
	for (uint64 r = 0; r < rows; r++)
	{
		HeapTuple	tup = SPI_tuptable->vals[r];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		QsFloorKeyValue key;

		key = QsFloorJobKey(DatumGetInt32(SPI_getbinval(tup, desc, 2, &isnull)),
							DatumGetInt64(SPI_getbinval(tup, desc, 3, &isnull)),
							DatumGetInt64(SPI_getbinval(tup, desc, 4, &isnull)));
		QsFloorFound(pf, which[DatumGetInt64(SPI_getbinval(tup, desc, 1, &isnull)) - 1], key);
	}
	if (n > 0)
		SPI_freetuptable(SPI_tuptable);
	QsFloorProbed(pf, which, n);
}

/*
 * QsFloorMisfitSame tells whether the last committed run of a queue's
 * misconfiguration check (QsWriteMisconfiguration) checked the limits
 * whose signature is given, of the pairs of pf given (pairs[n], indexes
 * into pf->pairs), while each pair had the generation pf read (before
 * this pass's snapshot): every write of a RUNNABLE job of a pair in its
 * share's order, whatever it changed, counts in the generation of the
 * pair at its commit (a submission, job_scan_floor), so such a pass would
 * find nothing to change.  A write that has committed and not yet counted
 * when pf was read is checked by the next pass, as if it came a moment
 * later: this pass notes nothing.  Never with floors that are not valid
 * (QsFloorReadPairs), so at least every QS_FLOOR_CHECK_MS.
 */
bool
QsFloorMisfitSame(const QsPairFloors *pf, const int *pairs, int n, uint64 signature)
{
	bool		same;

	if (floors == NULL || !pf->marker.valid || pf->marker_entry == NULL)
		return false;
	for (int i = 0; i < n; i++)
		if (pairs[i] < 0 || !pf->pairs[pairs[i]].seen.valid || pf->pairs[pairs[i]].entry == NULL)
			return false;
	LWLockAcquire(floor_lock, LW_SHARED);
	same = pf->marker_entry->misfit == signature;
	for (int i = 0; same && i < n; i++)
		same = pf->pairs[pairs[i]].entry->misfit == pf->pairs[pairs[i]].seen.gen + 1;
	LWLockRelease(floor_lock);
	return same;
}

/* NoteMisfit notes a value of an entry's misfit for the commit. */
static void
NoteMisfit(FloorEntry *entry, uint64 misfit)
{
	MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);
	PendingMisfit *p = palloc(sizeof(PendingMisfit));

	p->entry = entry;
	p->misfit = misfit;
	p->level = GetCurrentTransactionNestLevel();
	pending_misfit = lappend(pending_misfit, p);
	MemoryContextSwitchTo(old);
}

/*
 * QsFloorMisfitNote notes, for the commit, that this pass ran the
 * misconfiguration check of the limits of that signature, of the pairs
 * given, with the generations pf read (QsFloorMisfitSame).
 */
void
QsFloorMisfitNote(const QsPairFloors *pf, const int *pairs, int n, uint64 signature)
{
	if (floors == NULL || pf->marker_entry == NULL)
		return;
	for (int i = 0; i < n; i++)
		if (pairs[i] >= 0 && pf->pairs[pairs[i]].entry != NULL)
			NoteMisfit(pf->pairs[pairs[i]].entry, pf->pairs[pairs[i]].seen.gen + 1);
	NoteMisfit(pf->marker_entry, signature);
}

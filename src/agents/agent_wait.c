/*-------------------------------------------------------------------------
 *
 * agent_wait.c
 *		agent_wait(): an agent waits for what concerns it (a job dispatched
 *		to it, a stop of a job it holds, a peer of a job of several parts)
 *		without LISTEN, woken by the commit that made it (issue 42, item 4;
 *		doc/agents.md "Waiting without LISTEN").
 *
 * Why.  PostgreSQL 15 signals every session of the database that listens,
 * on any channel, at each commit that notifies; each wakes up, starts a
 * transaction and reads the notifications.  With every host's agent
 * listening, a fleet of 1,000 hosts had 1,000 backends woken at every
 * pass that dispatched: 62% of the server's CPU at 20 jobs/s
 * (bench/README.md).  A waiting agent here is woken alone.
 *
 * How.  Each backend has a slot in shared memory (by its PGPROC number):
 * the agent and queue it waits for, since its first agent_wait, until it
 * exits or waits for another; and what is pending for it.  A transaction
 * notes its wake-ups (QsWakeAgent: an agent by name, or every agent of a
 * queue) and sets them at its commit, after which what woke the agent is
 * visible: the pending bits of each slot concerned, and its latch.  A
 * wake-up noted while the agent was not waiting stays pending, so a call
 * returns at once: no wake-up is lost between an agent's claim and its
 * next wait.  Wake-ups of a transaction rolled back are dropped (those of
 * a subtransaction rolled back are kept: a wake-up for nothing costs the
 * agent a claim that finds nothing).  Without the library preloaded
 * there is no shared memory: agent_wait is refused (0A000) and agents
 * LISTEN as before.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timeout.h"
#include "utils/wait_event.h"

#include "agent_wait.h"
#include "checks.h"
#include "constants.h"
#include "identity.h"

/* What woke an agent, as agent_wait returns it (QS_WAKE_* bits, in order). */
static const char *const WakeNames[] = {"dispatch", "stop", "peers"};

#define QS_WAKE_ALL (QS_WAKE_DISPATCH | QS_WAKE_STOP | QS_WAKE_PEERS)
#define QS_MAX_WAIT_MS (3600 * 1000)

typedef struct WaitSlot
{
	Oid			dboid;			/* InvalidOid: the slot waits for nothing */
	char		agent[QS_MAX_NAME_LEN + 1];
	char		queue[QS_MAX_NAME_LEN + 1];
	uint32		pending;		/* QS_WAKE_* bits set since the last return */
	Latch	   *latch;
} WaitSlot;

typedef struct WaitShared
{
	LWLock	   *lock;
	int			nslots;
	WaitSlot	slots[FLEXIBLE_ARRAY_MEMBER];
} WaitShared;

/* The wake-ups of the running transaction: by agent, and queue-wide. */
typedef struct AgentWake
{
	char		agent[QS_MAX_NAME_LEN + 1];
	uint32		what;
} AgentWake;

typedef struct QueueWake
{
	char	   *queue;
	uint32		what;
} QueueWake;

static WaitShared *shared = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;
static HTAB *agent_wakes = NULL;	/* in TopTransactionContext */
static List *queue_wakes = NIL; /* of QueueWake, in TopTransactionContext */
static bool exit_hook_set = false;

static Size
WaitShmemSize(void)
{
	return add_size(offsetof(WaitShared, slots), mul_size(MaxBackends, sizeof(WaitSlot)));
}

static void
WaitShmemRequest(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(WaitShmemSize()));
	RequestNamedLWLockTranche("quota_sched agent waits", 1);
}

static void
WaitShmemStartup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	shared = ShmemInitStruct("quota_sched agent waits", WaitShmemSize(), &found);
	if (!found)
	{
		memset(shared, 0, WaitShmemSize());
		shared->lock = &(GetNamedLWLockTranche("quota_sched agent waits"))->lock;
		shared->nslots = MaxBackends;
	}
	LWLockRelease(AddinShmemInitLock);
}

/* QsAgentWaitRegister sets up the slots' shared memory, when preloaded. */
void
QsAgentWaitRegister(void)
{
	if (!process_shared_preload_libraries_in_progress)
		return;
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = WaitShmemRequest;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = WaitShmemStartup;
}

/*
 * QsWakeAgent notes a wake-up (QS_WAKE_* bits) for the commit: of the agent
 * named (in any queue), or, agent NULL, of every agent waiting for the
 * queue.  Nothing without the shared memory.
 */
void
QsWakeAgent(const char *queue, const char *agent, uint32 what)
{
	MemoryContext old;

	if (shared == NULL)
		return;
	old = MemoryContextSwitchTo(TopTransactionContext);
	if (agent == NULL)
	{
		QueueWake  *w = palloc(sizeof(QueueWake));

		w->queue = pstrdup(queue);
		w->what = what;
		queue_wakes = lappend(queue_wakes, w);
	}
	else if (strlen(agent) <= QS_MAX_NAME_LEN)
	{
		AgentWake  *w;
		bool		found;

		if (agent_wakes == NULL)
		{
			HASHCTL		ctl = {.keysize = QS_MAX_NAME_LEN + 1,.entrysize = sizeof(AgentWake),
			.hcxt = TopTransactionContext};

			agent_wakes = hash_create("quota_sched agent wakes", 64, &ctl,
									  HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
		}
		w = hash_search(agent_wakes, agent, HASH_ENTER, &found);
		w->what = found ? w->what | what : what;
	}
	MemoryContextSwitchTo(old);
}

/* WakesFor: the wake-ups of the transaction that concern a slot */
static uint32
WakesFor(const WaitSlot *slot)
{
	uint32		what = 0;
	ListCell   *lc;
	AgentWake  *w;

	foreach(lc, queue_wakes)
		if (strcmp(((QueueWake *) lfirst(lc))->queue, slot->queue) == 0)
			what |= ((QueueWake *) lfirst(lc))->what;
	if (agent_wakes != NULL &&
		(w = hash_search(agent_wakes, slot->agent, HASH_FIND, NULL)) != NULL)
		what |= w->what;
	return what;
}

/* SetWakes sets the wake-ups of a committed transaction: bits and latches. */
static void
SetWakes(void)
{
	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	for (int i = 0; i < shared->nslots; i++)
	{
		WaitSlot   *slot = &shared->slots[i];
		uint32		what;

		if (slot->dboid != MyDatabaseId || (what = WakesFor(slot)) == 0)
			continue;
		slot->pending |= what;
		SetLatch(slot->latch);
	}
	LWLockRelease(shared->lock);
}

/*
 * QsAgentWaitXactEvent sets the wake-ups at commit (after it: what woke
 * an agent is visible to what it runs next) and forgets them at any end.
 */
void
QsAgentWaitXactEvent(XactEvent event)
{
	if (event == XACT_EVENT_COMMIT && (agent_wakes != NULL || queue_wakes != NIL))
		SetWakes();
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PREPARE || event == XACT_EVENT_PARALLEL_COMMIT ||
		event == XACT_EVENT_PARALLEL_ABORT)
	{
		agent_wakes = NULL;
		queue_wakes = NIL;
	}
}

/* MySlot: this backend's slot (every backend's PGPROC number is below MaxBackends) */
static WaitSlot *
MySlot(void)
{
	if (MyProc == NULL || MyProc->pgprocno < 0 || MyProc->pgprocno >= shared->nslots)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("agent_wait is not available to this process")));
	return &shared->slots[MyProc->pgprocno];
}

/* Unsubscribe frees the backend's slot as it exits. */
static void
Unsubscribe(int code, Datum arg)
{
	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	MySlot()->dboid = InvalidOid;
	LWLockRelease(shared->lock);
}

/*
 * TakePending returns what is pending for the backend's slot and clears
 * it; the first wait for an agent and queue (or for others than the last)
 * makes the slot theirs, with everything pending: what came before is
 * not known.
 */
static uint32
TakePending(const char *agent, const char *queue)
{
	WaitSlot   *slot = MySlot();
	uint32		what;

	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	if (slot->dboid != MyDatabaseId || strcmp(slot->agent, agent) != 0 ||
		strcmp(slot->queue, queue) != 0)
	{
		strlcpy(slot->agent, agent, sizeof(slot->agent));
		strlcpy(slot->queue, queue, sizeof(slot->queue));
		slot->latch = MyLatch;
		slot->pending = QS_WAKE_ALL;
		slot->dboid = MyDatabaseId;
	}
	what = slot->pending;
	slot->pending = 0;
	LWLockRelease(shared->lock);
	return what;
}

/*
 * Cancelled: a cancel request (not a timeout's) has come; it is taken
 * here, so that it ends the wait without an error.  An agent cancels its
 * wait when it needs its connection (a job of its own ended).
 */
static bool
Cancelled(void)
{
	if (!QueryCancelPending || QueryCancelHoldoffCount != 0 ||
		get_timeout_indicator(STATEMENT_TIMEOUT, false) ||
		get_timeout_indicator(LOCK_TIMEOUT, false))
		return false;
	QueryCancelPending = false;
	return true;
}

/* WokenRow: the procedure's one output row, woken: the names of the bits */
static Datum
WokenRow(uint32 what)
{
	Datum		names[lengthof(WakeNames)];
	int			n = 0;
	TupleDesc	desc = CreateTemplateTupleDesc(1);
	Datum		value;
	bool		isnull = false;

	for (int i = 0; i < (int) lengthof(WakeNames); i++)
		if (what & (1 << i))
			names[n++] = CStringGetTextDatum(WakeNames[i]);
	value = PointerGetDatum(construct_array(names, n, TEXTOID, -1, false, TYPALIGN_INT));
	TupleDescInitEntry(desc, 1, "woken", TEXTARRAYOID, -1, 0);
	desc = BlessTupleDesc(desc);
	return HeapTupleGetDatum(heap_form_tuple(desc, &value, &isnull));
}

/*
 * The backend's wait set on its client's socket, its latch and the
 * postmaster's death (PostgreSQL's libpq/libpq.h, which includes
 * libpq-be.h, which needs GSSAPI's headers to build).
 */
extern PGDLLIMPORT WaitEventSet *FeBeWaitSet;
#define FeBeWaitSetSocketPos 0

/*
 * WaitForWake waits on the latch for at most timeout_ms, and, where the
 * system can tell, for the client to close its connection (as PostgreSQL's
 * pq_check_connection asks: the set's socket event is set again before
 * every read and write); what ended the wait (WL_* bits).
 */
static int
WaitForWake(long timeout_ms)
{
	WaitEvent	event;

	if (FeBeWaitSet == NULL || !WaitEventSetCanReportClosed())
		return WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, timeout_ms,
						 PG_WAIT_EXTENSION);
	ModifyWaitEvent(FeBeWaitSet, FeBeWaitSetSocketPos, WL_SOCKET_CLOSED, NULL);
	if (WaitEventSetWait(FeBeWaitSet, timeout_ms, &event, 1, PG_WAIT_EXTENSION) == 0)
		return WL_TIMEOUT;
	if (event.events & WL_POSTMASTER_DEATH)
		proc_exit(1);
	return event.events;
}

/*
 * Wait waits until something is pending for the agent, the deadline, a
 * cancel request, or the client's end (a backend left waiting for an agent
 * that exited would keep its slot until the timeout); what was pending
 * (0: nothing).
 */
static uint32
Wait(const char *agent, const char *queue, TimestampTz deadline)
{
	uint32		what;
	int			rc;

	while ((what = TakePending(agent, queue)) == 0 && !Cancelled())
	{
		long		left = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), deadline);

		if (left <= 0)
			break;
		rc = WaitForWake(left);
		ResetLatch(MyLatch);
		if (rc & WL_SOCKET_CLOSED)
			break;				/* the client is gone: so is the wait */
		if (Cancelled())
			break;
		CHECK_FOR_INTERRUPTS();
	}
	return what;
}

PG_FUNCTION_INFO_V1(qs_agent_wait);

/*
 * qs_agent_wait(agent, job_queue, timeout_ms, INOUT woken text[]), a
 * procedure: woken is what is pending for the agent ('dispatch', 'stop',
 * 'peers'), at once if anything is, else once something is, or the
 * timeout (0 to an hour) passes or a cancel request comes (then empty).
 * To wait, it commits the CALL's transaction first, so that it holds no
 * snapshot while it waits (a waiting fleet would hold back vacuum); so a
 * wait above 0 must be a CALL outside a transaction block (25001).  Takes
 * no lock.
 */
Datum
qs_agent_wait(PG_FUNCTION_ARGS)
{
	char	   *agent;
	char	   *queue;
	int			timeout_ms;
	uint32		what;

	QsCheckSchemaVersion();
	agent = QsNameArg(fcinfo, 0, "agent");
	queue = QsNameArg(fcinfo, 1, "job_queue");
	if (PG_ARGISNULL(2) || PG_GETARG_INT32(2) < 0 || PG_GETARG_INT32(2) > QS_MAX_WAIT_MS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("timeout_ms must be 0 to %d", QS_MAX_WAIT_MS)));
	timeout_ms = PG_GETARG_INT32(2);
	if (shared == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("agent_wait needs quota_sched in shared_preload_libraries"),
				 errhint("Agents LISTEN instead.")));
	if (!exit_hook_set)
	{
		(void) MySlot();		/* this process has one */
		before_shmem_exit(Unsubscribe, (Datum) 0);
		exit_hook_set = true;
	}
	if ((what = TakePending(agent, queue)) != 0 || timeout_ms == 0)
		PG_RETURN_DATUM(WokenRow(what));
	if (fcinfo->context == NULL || !IsA(fcinfo->context, CallContext) ||
		((CallContext *) fcinfo->context)->atomic)
		ereport(ERROR,
				(errcode(ERRCODE_ACTIVE_SQL_TRANSACTION),
				 errmsg("agent_wait waits only in a CALL outside a transaction block"),
				 errdetail("It commits its transaction before it waits, to hold no snapshot."),
				 errhint("Give timeout_ms 0 to take what is pending without waiting.")));
	SPI_connect_ext(SPI_OPT_NONATOMIC);
	SPI_commit();
	what = Wait(agent, queue, TimestampTzPlusMilliseconds(GetCurrentTimestamp(), timeout_ms));
	SPI_finish();
	PG_RETURN_DATUM(WokenRow(what));
}

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
 * exits or waits for another; what is pending for it; whether it waits
 * now; and what the agent has room for, as the session's committed claims
 * and reports tell.  A transaction notes its wake-ups (QsWakeAgent: an
 * agent by name; QsWakeForJob: a job not placed, for one agent of its
 * queue with room for it, or every one when none has) and sets them at
 * its commit, after which what woke the agent is visible: the pending
 * bits of each slot concerned, and its latch.  A
 * wake-up noted while the agent was not waiting stays pending, so a call
 * returns at once: no wake-up is lost between an agent's claim and its
 * next wait.  Wake-ups of a transaction rolled back are dropped (those of
 * a subtransaction rolled back are kept: a wake-up for nothing costs the
 * agent a claim that finds nothing).  Without the library preloaded
 * there is no shared memory: agent_wait is refused (0A000) and agents
 * LISTEN as before.
 *
 * Gives.  A session that waits with a lease may be given a job not
 * placed by the pass that dispatches it (QsGiveJob): the pass claims it
 * for the agent and takes the room at once; at the pass's commit the job
 * joins the slot's list of jobs given, which the session's next claim
 * returns (QsTakeGiven) and, once that claim commits, forgets.  A job of
 * a subtransaction rolled back stays listed: the claim finds it no longer
 * held by the agent and returns nothing for it.
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
#include "fleet.h"
#include "identity.h"
#include "query.h"

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
	bool		waiting;		/* in agent_wait now, nothing pending */
	char		unit[QS_MAX_NAME_LEN + 1];	/* of the session's last claim ("": any) */
	int64		free;			/* instances it has free, as its claims and
								 * reports tell (QsNoteClaim); -1: not known */
	Latch	   *latch;
	uint32		gen;			/* moves on when the slot changes hands */
	uint32		room_gen;		/* moves on when a claim sets free (SetRoom) */
	int64		give_usecs;		/* lease of the jobs given it at dispatch; 0:
								 * none is (QsGiveJob) */
	NameData	role;			/* the waiting session's role: the jobs' agent_role */
	int			nreserved;		/* jobs given by passes not yet committed */
	int			ngiven;			/* jobs given, not yet returned by its claim */
	int64		given[QS_MAX_GIVEN];
} WaitSlot;

typedef struct WaitShared
{
	LWLock	   *lock;
	int			nslots;
	int			next;			/* the slot a dispatch tries first (PickSlot) */
	WaitSlot	slots[FLEXIBLE_ARRAY_MEMBER];
} WaitShared;

/* The wake-ups of the running transaction: by agent, and queue-wide. */
typedef struct AgentWake
{
	char		agent[QS_MAX_NAME_LEN + 1];
	uint32		what;
} AgentWake;

/* A job dispatched to its queue, not placed (QsWakeForJob). */
typedef struct QueueWake
{
	char	   *queue;
	char	   *unit;
	int64		instances;
} QueueWake;

/* A job a pass gives to a waiting session (QsGiveJob), for its commit. */
typedef struct Give
{
	int			slot;
	uint32		gen;
	uint32		room_gen;
	int64		job_id;
	int64		instances;
	int			level;			/* the (sub)transaction's nesting level */
} Give;

/* A job given that a claim of this transaction returned (QsTakeGiven). */
typedef struct Claimed
{
	int64		job_id;
	int			level;
} Claimed;

static WaitShared *shared = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;
static HTAB *agent_wakes = NULL;	/* in TopTransactionContext */
static List *queue_wakes = NIL; /* of QueueWake, in TopTransactionContext */
static List *gives = NIL;		/* of Give (slot -1: none), in TopTransactionContext */
static Claimed claimed_given[QS_MAX_GIVEN];
static int	nclaimed_given = 0;
static bool exit_hook_set = false;	/* this backend has waited: it has a slot */
static bool i_wait = false;		/* its slot is waiting, as this backend set it */

static WaitSlot *MySlot(void);

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
 * QsWakeAgent notes a wake-up (QS_WAKE_* bits) of the agent named, in any
 * queue, for the commit.  Nothing without the shared memory.
 */
void
QsWakeAgent(const char *agent, uint32 what)
{
	MemoryContext old;
	AgentWake  *w;
	bool		found;

	if (shared == NULL || strlen(agent) > QS_MAX_NAME_LEN)
		return;
	old = MemoryContextSwitchTo(TopTransactionContext);
	if (agent_wakes == NULL)
	{
		HASHCTL		ctl = {.keysize = QS_MAX_NAME_LEN + 1,.entrysize = sizeof(AgentWake),
		.hcxt = TopTransactionContext};

		agent_wakes = hash_create("quota_sched agent wakes", 64, &ctl,
								  HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
	}
	w = hash_search(agent_wakes, agent, HASH_ENTER, &found);
	w->what = found ? w->what | what : what;
	MemoryContextSwitchTo(old);
}

/*
 * QsWakeForJob notes, for the commit, a job of a unit and size dispatched
 * to its queue and not placed: one waiting agent of the queue that can
 * take it is woken (PickSlot), or, when none can, every agent of the
 * queue that waits.  Nothing without the shared memory.
 */
void
QsWakeForJob(const char *queue, const char *unit, int64 instances)
{
	MemoryContext old;
	QueueWake  *w;

	if (shared == NULL)
		return;
	old = MemoryContextSwitchTo(TopTransactionContext);
	w = palloc(sizeof(QueueWake));
	w->queue = pstrdup(queue);
	w->unit = pstrdup(unit);
	w->instances = instances;
	queue_wakes = lappend(queue_wakes, w);
	MemoryContextSwitchTo(old);
}

/* Wake sets what is pending for a slot, and its latch. */
static void
Wake(WaitSlot *slot, uint32 what)
{
	slot->pending |= what;
	slot->waiting = false;
	SetLatch(slot->latch);
}

/*
 * PickSlot wakes, for a job dispatched to its queue and not placed, one
 * agent that can take it: its session waits for the queue now with
 * nothing pending, and its last claim, of the job's unit or of any, left
 * it room for the job (QsNoteClaim).  That room is taken, so that the
 * next job of the commit goes to another agent.  Sessions take turns
 * (shared->next).  False when none can.
 */
static bool
PickSlot(const QueueWake *w)
{
	for (int k = 0; k < shared->nslots; k++)
	{
		int			i = (shared->next + k) % shared->nslots;
		WaitSlot   *slot = &shared->slots[i];

		if (slot->dboid != MyDatabaseId || !slot->waiting || slot->free < w->instances ||
			strcmp(slot->queue, w->queue) != 0 ||
			(slot->unit[0] != '\0' && strcmp(slot->unit, w->unit) != 0))
			continue;
		slot->free -= w->instances;
		Wake(slot, QS_WAKE_DISPATCH);
		shared->next = (i + 1) % shared->nslots;
		return true;
	}
	return false;
}

/*
 * QsGiveJob gives a job of a pass, dispatched to its queue and not placed
 * (agent NULL), or placed on that agent alone, to a session that waits
 * for the queue (and as that agent) with agent_wait(lease => ...) now,
 * with nothing pending, room for the job (as PickSlot) and fewer than
 * QS_MAX_GIVEN jobs given and not yet claimed: the caller claims it for
 * *to's agent and role, with its lease, in the pass (agents.md, "Jobs
 * given at their dispatch").  The room is taken now; the session
 * is woken, and its next claim returns the job, once the pass commits
 * (SetGives); a pass rolled back gives the room back.  Sessions take
 * turns (shared->next).  False when none can take it (or without the
 * shared memory).
 */
bool
QsGiveJob(const char *queue, const char *unit, const char *agent, int64 instances, int64 job_id,
		  QsGiveTo *to)
{
	bool		given = false;
	Give	   *g;
	MemoryContext old;

	if (shared == NULL)
		return false;
	/* noted first: no error may come between the room taken and its note */
	old = MemoryContextSwitchTo(TopTransactionContext);
	g = palloc(sizeof(Give));
	g->slot = -1;
	gives = lappend(gives, g);
	MemoryContextSwitchTo(old);
	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	for (int k = 0; k < shared->nslots && !given; k++)
	{
		int			i = (shared->next + k) % shared->nslots;
		WaitSlot   *slot = &shared->slots[i];

		if (slot->dboid != MyDatabaseId || !slot->waiting || slot->give_usecs == 0 ||
			slot->free < instances || slot->ngiven + slot->nreserved >= QS_MAX_GIVEN ||
			strcmp(slot->queue, queue) != 0 ||
			(slot->unit[0] != '\0' && strcmp(slot->unit, unit) != 0) ||
			(agent != NULL && strcmp(slot->agent, agent) != 0))
			continue;
		slot->free -= instances;
		slot->nreserved++;
		strlcpy(to->agent, slot->agent, sizeof(to->agent));
		strlcpy(to->role, NameStr(slot->role), sizeof(to->role));
		to->lease_usecs = slot->give_usecs;
		to->slot = i;
		*g = (Give) {i, slot->gen, slot->room_gen, job_id, instances,
		GetCurrentTransactionNestLevel()};
		shared->next = (i + 1) % shared->nslots;
		given = true;
	}
	LWLockRelease(shared->lock);
	if (!given)
	{
		gives = list_delete_last(gives);	/* a pass that gives nothing notes nothing */
		pfree(g);
	}
	return given;
}

/*
 * SetGive(s) end the gives of a transaction (QsGiveJob), the shared lock
 * held: committed, each job is the session's to claim, and wakes it; else
 * the room taken comes back, unless a claim has set it since.  A slot that
 * changed hands meanwhile keeps nothing: its new session never waited for
 * the job (its agent releases it, as a job it does not know).
 */
static void
SetGive(Give *g, bool committed)
{
	WaitSlot   *slot;

	if (g->slot < 0 || (slot = &shared->slots[g->slot])->gen != g->gen)
		return;
	slot->nreserved--;
	if (committed)
	{
		slot->given[slot->ngiven++] = g->job_id;
		Wake(slot, QS_WAKE_DISPATCH);
	}
	else if (slot->room_gen == g->room_gen && slot->free >= 0)
		slot->free += g->instances;
	g->slot = -1;
}

static void
SetGives(bool committed)
{
	ListCell   *lc;

	foreach(lc, gives)
		SetGive(lfirst(lc), committed);
}

/* Taken: whether a claim of this transaction already took a job given */
static bool
Taken(int64 job_id)
{
	for (int c = 0; c < nclaimed_given; c++)
		if (claimed_given[c].job_id == job_id)
			return true;
	return false;
}

/*
 * QsTakeGiven copies into ids (room for QS_MAX_GIVEN) the jobs given to
 * this session for the agent and queue it waits for, but those an earlier
 * claim of the transaction took, and returns their number: its claim
 * returns them (those the agent still holds), and once the claim commits
 * they are no longer the session's to take (ForgetClaimed).
 */
int
QsTakeGiven(const char *agent, const char *queue, int64 *ids)
{
	WaitSlot   *slot;
	int			n = 0;

	if (shared == NULL || !exit_hook_set)
		return 0;				/* this backend never waited */
	slot = MySlot();
	LWLockAcquire(shared->lock, LW_SHARED);
	if (slot->dboid == MyDatabaseId && strcmp(slot->agent, agent) == 0 &&
		strcmp(slot->queue, queue) == 0)
	{
		for (int i = 0; i < slot->ngiven && nclaimed_given + n < QS_MAX_GIVEN; i++)
			if (!Taken(slot->given[i]))
				ids[n++] = slot->given[i];
	}
	LWLockRelease(shared->lock);
	for (int i = 0; i < n; i++)
		claimed_given[nclaimed_given++] = (Claimed) {ids[i], GetCurrentTransactionNestLevel()};
	return n;
}

/* ForgetClaimed: the jobs a committed claim returned are no longer given */
static void
ForgetClaimed(void)
{
	WaitSlot   *slot = &shared->slots[MyProc->pgprocno];
	int			kept = 0;

	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	for (int i = 0; i < slot->ngiven; i++)
		if (!Taken(slot->given[i]))
			slot->given[kept++] = slot->given[i];
	slot->ngiven = kept;
	LWLockRelease(shared->lock);
}

/*
 * SetWakes sets the wake-ups of a committed transaction: bits and latches.
 * Each job not placed wakes one agent (PickSlot); the queues of those no
 * agent could take wake every agent that waits for them, as do the
 * agents named theirs.
 */
static void
SetWakes(void)
{
	List	   *everyone = NIL; /* queues whose waiting agents all wake */
	ListCell   *lc;

	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	SetGives(true);
	foreach(lc, queue_wakes)
	{
		QueueWake  *w = lfirst(lc);

		if (!QsListHasName(everyone, w->queue) && !PickSlot(w))
			everyone = lappend(everyone, w->queue);
	}
	for (int i = 0; i < shared->nslots; i++)
	{
		WaitSlot   *slot = &shared->slots[i];
		AgentWake  *w;
		uint32		what = 0;

		if (slot->dboid != MyDatabaseId)
			continue;
		if (QsListHasName(everyone, slot->queue))
			what |= QS_WAKE_DISPATCH;
		if (agent_wakes != NULL &&
			(w = hash_search(agent_wakes, slot->agent, HASH_FIND, NULL)) != NULL)
			what |= w->what;
		if (what != 0)
			Wake(slot, what);
	}
	LWLockRelease(shared->lock);
}

/*
 * What the transaction's claims and reports tell of what its agent has
 * free (QsNoteClaim, QsNoteFreed), for its commit: a claim or a report
 * rolled back (and retried) tells nothing.
 */
static struct
{
	bool		noted;
	char		agent[QS_MAX_NAME_LEN + 1];
	bool		claimed;		/* a claim set free to max - taken */
	char		queue[QS_MAX_NAME_LEN + 1];
	char		unit[QS_MAX_NAME_LEN + 1];
	int64		free;
	int64		freed;			/* given back since */
}			room;

/* NoteRoom: whether this transaction may note the room of that agent */
static bool
NoteRoom(const char *agent)
{
	if (shared == NULL || !exit_hook_set || strlen(agent) > QS_MAX_NAME_LEN)
		return false;			/* this backend never waited */
	if (room.noted)
		return strcmp(room.agent, agent) == 0;	/* one agent a transaction */
	memset(&room, 0, sizeof(room));
	room.noted = true;
	strlcpy(room.agent, agent, sizeof(room.agent));
	return true;
}

/*
 * QsNoteClaim notes what a claim says the agent has free: max_instances
 * (0: no bound, so not known) less the instances it took, of the unit
 * claimed (NULL: any).  At commit, when the backend waits for that agent
 * and queue, a dispatch not placed may wake it only while it has room
 * (PickSlot).
 */
void
QsNoteClaim(const char *agent, const char *queue, const char *unit, int max_instances,
			int64 taken)
{
	if (!NoteRoom(agent) || strlen(queue) > QS_MAX_NAME_LEN ||
		(unit != NULL && strlen(unit) > QS_MAX_NAME_LEN))
		return;
	room.claimed = true;
	strlcpy(room.queue, queue, sizeof(room.queue));
	strlcpy(room.unit, unit ? unit : "", sizeof(room.unit));
	room.free = max_instances > 0 ? Max(max_instances - taken, 0) : -1;
	room.freed = 0;
}

/*
 * QsNoteFreed notes that a job of the agent ended its attempt (a report):
 * at commit its instances are free again, when what the agent has free
 * is known.
 */
void
QsNoteFreed(const char *agent, int64 instances)
{
	if (NoteRoom(agent))
		room.freed += instances;
}

/* SetRoom writes the transaction's room of its agent in the slot, at commit. */
static void
SetRoom(void)
{
	WaitSlot   *slot = &shared->slots[MyProc->pgprocno];

	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	if (slot->dboid == MyDatabaseId && strcmp(slot->agent, room.agent) == 0 &&
		(!room.claimed || strcmp(slot->queue, room.queue) == 0))
	{
		if (room.claimed)
		{
			strlcpy(slot->unit, room.unit, sizeof(slot->unit));
			slot->free = room.free;
			slot->room_gen++;
		}
		if (slot->free >= 0)
			slot->free += room.freed;
	}
	LWLockRelease(shared->lock);
}

/*
 * SetWaiting says whether the backend's slot waits now (PickSlot wakes
 * only such a one).
 */
static void
SetWaiting(bool waiting)
{
	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	shared->slots[MyProc->pgprocno].waiting = waiting;
	LWLockRelease(shared->lock);
	i_wait = waiting;
}

/*
 * QsAgentWaitXactEvent sets the wake-ups at commit (after it: what woke
 * an agent is visible to what it runs next) and forgets them at any end.
 */
void
QsAgentWaitXactEvent(XactEvent event)
{
	if (event == XACT_EVENT_COMMIT && room.noted)
		SetRoom();
	/* prepared, the claim's rows were returned all the same */
	if ((event == XACT_EVENT_COMMIT || event == XACT_EVENT_PREPARE) && nclaimed_given > 0)
		ForgetClaimed();
	if (event == XACT_EVENT_COMMIT &&
		(agent_wakes != NULL || queue_wakes != NIL || gives != NIL))
		SetWakes();
	if ((event == XACT_EVENT_ABORT || event == XACT_EVENT_PREPARE) && gives != NIL)
	{
		LWLockAcquire(shared->lock, LW_EXCLUSIVE);
		SetGives(false);		/* prepared: committed later, its jobs are
								 * the agent's heartbeat's to release */
		LWLockRelease(shared->lock);
	}
	if (event == XACT_EVENT_ABORT && i_wait)
		SetWaiting(false);		/* a wait that ended in an error */
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PREPARE || event == XACT_EVENT_PARALLEL_COMMIT ||
		event == XACT_EVENT_PARALLEL_ABORT)
	{
		agent_wakes = NULL;
		queue_wakes = NIL;
		gives = NIL;
		nclaimed_given = 0;
		room.noted = false;
	}
}

/*
 * QsAgentWaitSubXactEvent: a subtransaction that commits hands its gives
 * and the jobs its claims returned to its parent; one rolled back gives
 * the room back, and the jobs its claims took are the session's to take
 * again (its rows were not returned, or not kept).
 */
void
QsAgentWaitSubXactEvent(SubXactEvent event)
{
	int			level = GetCurrentTransactionNestLevel();
	ListCell   *lc;
	int			kept = 0;

	if (event != SUBXACT_EVENT_COMMIT_SUB && event != SUBXACT_EVENT_ABORT_SUB)
		return;
	foreach(lc, gives)
	{
		Give	   *g = lfirst(lc);

		if (g->level < level)
			continue;
		g->level = level - 1;
		if (event == SUBXACT_EVENT_ABORT_SUB && g->slot >= 0)
		{
			LWLockAcquire(shared->lock, LW_EXCLUSIVE);
			SetGive(g, false);
			LWLockRelease(shared->lock);
		}
	}
	for (int c = 0; c < nclaimed_given; c++)
	{
		if (claimed_given[c].level >= level && event == SUBXACT_EVENT_ABORT_SUB)
			continue;
		claimed_given[kept] = claimed_given[c];
		claimed_given[kept++].level = Min(claimed_given[c].level, level - 1);
	}
	nclaimed_given = kept;
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
	WaitSlot   *slot = MySlot();

	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	slot->dboid = InvalidOid;
	slot->gen++;
	slot->ngiven = slot->nreserved = 0;
	slot->give_usecs = 0;
	LWLockRelease(shared->lock);
}

/*
 * TakePending returns what is pending for the backend's slot and clears
 * it; the first wait for an agent and queue (or for others than the last)
 * makes the slot theirs, with everything pending: what came before is
 * not known, nor what the agent has free, and the jobs given to it for
 * another are no longer its own (SetGives).  With wait, when nothing is
 * pending, the slot waits from now on (SetWaiting), and takes jobs at
 * their dispatch with a lease of give_usecs (0: none) for the role named.
 */
static uint32
TakePending(const char *agent, const char *queue, bool wait, int64 give_usecs,
			const char *role)
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
		slot->unit[0] = '\0';
		slot->free = -1;
		slot->dboid = MyDatabaseId;
		slot->gen++;
		slot->ngiven = slot->nreserved = 0;
	}
	what = slot->pending;
	slot->pending = 0;
	slot->waiting = i_wait = wait && what == 0;
	slot->give_usecs = give_usecs;
	if (give_usecs > 0)
		namestrcpy(&slot->role, role);
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
 * SettleGives, as a wait that took gives ends (its slot no longer waits:
 * no pass takes its room any more), waits up to 0.4 s (within the margin
 * quota-sched-agent leaves to its statement_timeout) for the passes
 * that took its room to commit or roll back, and returns what they left
 * pending (a dispatch, for a job given): so a job given to the session
 * never comes after its wait said nothing of it (an agent that then stops
 * taking jobs would leave it held until its lease ran out).
 */
static uint32
SettleGives(void)
{
	WaitSlot   *slot = MySlot();
	TimestampTz until = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), 400);
	uint32		what = 0;
	int			reserved;

	for (;;)
	{
		LWLockAcquire(shared->lock, LW_EXCLUSIVE);
		reserved = slot->nreserved;
		what |= slot->pending;
		slot->pending = 0;
		LWLockRelease(shared->lock);
		if (reserved == 0 || GetCurrentTimestamp() >= until)
			return what;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 10,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * Wait waits until something is pending for the agent, the deadline, a
 * cancel request, or the client's end (a backend left waiting for an agent
 * that exited would keep its slot until the timeout); what was pending
 * (0: nothing).
 */
static uint32
Wait(const char *agent, const char *queue, TimestampTz deadline, int64 give_usecs,
	 const char *role)
{
	uint32		what;
	int			rc;

	while ((what = TakePending(agent, queue, true, give_usecs, role)) == 0 && !Cancelled())
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
	if (i_wait)
		SetWaiting(false);
	if (give_usecs > 0)
		what |= SettleGives();
	return what;
}

/*
 * GiveLease returns, in microseconds, the lease of the jobs a pass may
 * give the session while it waits (agent_wait's lease; 0 when null, or
 * when the agent is registered and DRAINING: it takes nothing new), after
 * checking that the caller may serve the queue (42501), as its claim
 * would.  SPI connected.
 */
static int64
GiveLease(FunctionCallInfo fcinfo, const char *agent, const char *queue)
{
	Interval   *lease;
	Oid			caller = GetUserId();
	QsSavedUser saved;
	bool		draining;

	if (PG_ARGISNULL(4))
		return 0;
	QsCheckInterval(PG_GETARG_DATUM(4), ERRCODE_INVALID_PARAMETER_VALUE, "lease", NULL,
					"A lease is a positive interval of at most "
					CppAsString2(QS_MAX_INTERVAL_DAYS) " days.");
	lease = PG_GETARG_INTERVAL_P(4);
	QsBecomeOwner(QsExtensionOwner(), &saved);
	QsRequireAgentAccess(caller, queue);
	draining = QsAgentDraining(agent);
	QsRestoreUser(&saved);
	if (draining)
		return 0;
	return lease->time + (lease->day + (int64) lease->month * DAYS_PER_MONTH) * USECS_PER_DAY;
}

PG_FUNCTION_INFO_V1(qs_agent_wait);

/*
 * qs_agent_wait(agent, job_queue, timeout_ms, INOUT woken text[], lease
 * interval), a procedure: woken is what is pending for the agent
 * ('dispatch', 'stop', 'peers'), at once if anything is, else once
 * something is, or the timeout (0 to an hour) passes or a cancel request
 * comes (then empty).  With a lease, while it waits, a pass may give it
 * the jobs not placed that it dispatches (QsGiveJob), for its next claim.
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
	int64		give_usecs;
	const char *role = GetUserNameFromId(GetUserId(), false);

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
	SPI_connect_ext(SPI_OPT_NONATOMIC);
	give_usecs = GiveLease(fcinfo, agent, queue);
	if ((what = TakePending(agent, queue, false, 0, NULL)) != 0 || timeout_ms == 0)
	{
		SPI_finish();
		PG_RETURN_DATUM(WokenRow(what));
	}
	if (fcinfo->context == NULL || !IsA(fcinfo->context, CallContext) ||
		((CallContext *) fcinfo->context)->atomic)
		ereport(ERROR,
				(errcode(ERRCODE_ACTIVE_SQL_TRANSACTION),
				 errmsg("agent_wait waits only in a CALL outside a transaction block"),
				 errdetail("It commits its transaction before it waits, to hold no snapshot."),
				 errhint("Give timeout_ms 0 to take what is pending without waiting.")));
	SPI_commit();
	what = Wait(agent, queue, TimestampTzPlusMilliseconds(GetCurrentTimestamp(), timeout_ms),
				give_usecs, role);
	SPI_finish();
	PG_RETURN_DATUM(WokenRow(what));
}

/*-------------------------------------------------------------------------
 *
 * words.h
 *		Every enumerated word quota_sched writes or reads, one kind of word
 *		at a time: job states, stop reasons, the kinds of a job's events,
 *		the actions of a pass, an agent's reports, the reasons a job is
 *		held back, requeued or failed, explain's blocked_by codes, and the
 *		words of the configuration (strategy, queueing, borrow order,
 *		budget period, the state of an environment, queue or share, of an
 *		agent).  This is their one home: the shell parses and prints them
 *		with the functions below, never with a spelling of its own.
 *
 * Each kind is one list, QS_<KIND>_WORDS(W): W(CONSTANT, "WORD") per
 * word, in order.  The list makes the kind's enum (its constants in that
 * order, after a "none" constant for the kinds that have one), its count
 * QS_<KIND>__COUNT and its table of names (words.c, which checks with a
 * StaticAssert that the table has exactly that many entries): a word
 * cannot be added without its name, nor read back as another.
 *
 * The kinds that columns hold (QsWordKind below, the first ones) have
 * their SQL home too: a DOMAIN of the same name in sql/words.sql, which
 * every column of the kind is checked against; the pg_regress scenario
 * core_words compares the two lists through the catalog
 * (quota_sched.core_words()).  A word added to a list is added there
 * too, and the update of the release adds it to the domain.
 *
 * Pure C, like the rest of the core.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_WORDS_H
#define QS_WORDS_H

#include <stdbool.h>

/* The helpers that make a kind's enum, count and table from its list. */
#define QS_WORD_ENUM(constant, word) constant,
#define QS_WORD_ONE(constant, word) + 1
#define QS_WORD_NAME(constant, word) word,

/* The states of a job (scheduling.md 4): job.state, job_event.from_state, to_state. */
#define QS_JOB_STATE_WORDS(W) \
	W(QS_RUNNABLE, "RUNNABLE") \
	W(QS_SCHEDULED, "SCHEDULED") \
	W(QS_STARTING, "STARTING") \
	W(QS_RUNNING, "RUNNING") \
	W(QS_SUCCEEDED, "SUCCEEDED") \
	W(QS_FAILED, "FAILED")

/*
 * Names of job states that exist as names only (scheduling.md 4): the
 * column accepts them (the domain job_state lists them after the states),
 * no code writes them, and they are no QsJobState: QsJobStateFromName
 * refuses them.
 */
#define QS_JOB_STATE_RESERVED_WORDS(W) \
	W(QS_SUBMITTED, "SUBMITTED") \
	W(QS_PENDING, "PENDING")

/* A pending stop (job.stop_reason), after QS_STOP_NONE (null: none). */
#define QS_STOP_WORDS(W) \
	W(QS_STOP_CROSS_SHARE, "CROSS_SHARE_PREEMPTION") \
	W(QS_STOP_IN_SHARE, "IN_SHARE_PREEMPTION") \
	W(QS_STOP_CAPACITY_REDUCED, "CAPACITY_REDUCED") \
	W(QS_STOP_TIMEOUT, "TIMEOUT") \
	W(QS_STOP_TERMINATED, "TERMINATED") \
	W(QS_STOP_PEER_FAILED, "PEER_FAILED") /* another part of the job failed */ \
	W(QS_STOP_PEER_LOST, "PEER_LOST") /* another part lost its lease */ \
	W(QS_STOP_PEER_RELEASED, "PEER_RELEASED") /* another part was released */

/* The kinds of a job's events (job_event.kind; job_history.c). */
#define QS_EVENT_WORDS(W) \
	W(QS_EVENT_STATE, "STATE") \
	W(QS_EVENT_STOP, "STOP") \
	W(QS_EVENT_TERMINATE, "TERMINATE") \
	W(QS_EVENT_PRIORITY, "PRIORITY") \
	W(QS_EVENT_PROMISE, "PROMISE") \
	W(QS_EVENT_PROMISE_LAPSED, "PROMISE_LAPSED")

/* A share's strategy (quota_share.strategy). */
#define QS_STRATEGY_WORDS(W) \
	W(QS_RESERVE, "RESERVE") \
	W(QS_LEND, "LEND") \
	W(QS_LEND_AND_BORROW, "LEND_AND_BORROW")

/* A share's queueing (quota_share.queueing; scheduling.md 3.2). */
#define QS_QUEUEING_WORDS(W) \
	W(QS_BEST_EFFORT, "BEST_EFFORT") \
	W(QS_STRICT, "STRICT")

/* A queue's borrow order (job_queue.borrow_order; scheduling.md 3.2). */
#define QS_BORROW_ORDER_WORDS(W) \
	W(QS_BORROW_FIFO, "FIFO") \
	W(QS_BORROW_FAIR, "FAIR")

/* The calendar period of a share's budget (quota_share.budget_period; 3.11). */
#define QS_PERIOD_WORDS(W) \
	W(QS_PERIOD_DAY, "DAY") \
	W(QS_PERIOD_WEEK, "WEEK") /* from Monday */ \
	W(QS_PERIOD_MONTH, "MONTH")

/* The state of an environment, a queue or a share (their state columns). */
#define QS_CONFIG_STATE_WORDS(W) \
	W(QS_ENABLED, "ENABLED") \
	W(QS_DISABLED, "DISABLED")

/* The state of an agent (agent.state; scheduling.md 3.10). */
#define QS_AGENT_STATE_WORDS(W) \
	W(QS_AGENT_ACTIVE, "ACTIVE") \
	W(QS_AGENT_DRAINING, "DRAINING")

/*
 * The state of a part of a job on one host (job_part.state; scheduling.md
 * 3.14): placed by the pass, claimed by its agent, running, ended (it
 * reported its end, lost its lease or was released).
 */
#define QS_PART_STATE_WORDS(W) \
	W(QS_PART_PLACED, "PLACED") \
	W(QS_PART_CLAIMED, "CLAIMED") \
	W(QS_PART_RUNNING, "RUNNING") \
	W(QS_PART_ENDED, "ENDED")

/*
 * How a part ended (job_part.ended_as; scheduling.md 3.14): as its agent
 * reported (or released it), its lease lost, or dropped unclaimed when
 * its job stopped or went back.
 */
#define QS_PART_END_WORDS(W) \
	W(QS_PART_SUCCEEDED, "SUCCEEDED") \
	W(QS_PART_FAILED, "FAILED") \
	W(QS_PART_STOPPED, "STOPPED") \
	W(QS_PART_RELEASED, "RELEASED") \
	W(QS_PART_LOST, "LOST") \
	W(QS_PART_DROPPED, "DROPPED")

/* The actions of a pass's decisions (run_pass().action). */
#define QS_ACTION_WORDS(W) \
	W(QS_DISPATCH, "DISPATCH") \
	W(QS_PREEMPT, "PREEMPT") \
	W(QS_STOP, "STOP") \
	W(QS_REQUEUE, "REQUEUE") \
	W(QS_FAIL, "FAIL")

/* What an agent reports of a job it holds (report()'s state). */
#define QS_REPORT_WORDS(W) \
	W(QS_REPORT_RUNNING, "RUNNING") \
	W(QS_REPORT_SUCCEEDED, "SUCCEEDED") \
	W(QS_REPORT_FAILED, "FAILED") \
	W(QS_REPORT_STOPPED, "STOPPED")

/*
 * Why a RUNNABLE job is held back whatever the capacity (scheduling.md
 * 3.10, 3.11, 3.17), after QS_HOLD_NONE: explain's blocked_by, and the
 * status_reason of a job held back by the first three (DEPENDENCY is
 * written by its submission and by the end of what it depends on, the
 * others by the pass).
 */
#define QS_HOLD_WORDS(W) \
	W(QS_HOLD_DEPENDENCY, "DEPENDENCY") /* a job it depends on has not SUCCEEDED */ \
	W(QS_HOLD_BUDGET_EXHAUSTED, "BUDGET_EXHAUSTED") /* its share spent its budget of the unit */ \
	W(QS_HOLD_NO_AGENT_FITS, "NO_AGENT_FITS") /* larger than the largest live, active agent */ \
	W(QS_HOLD_CLAIM_BACKOFF, "CLAIM_BACKOFF") /* in its backoff after a claim timeout */

/*
 * The reasons the system gives a job that it requeues or fails
 * (status_reason, job_event.reason), besides the stop reasons and the
 * holds: an agent's or a user's own reason is free text.  MISCONFIGURATION
 * is followed by ':' and a QS_MISFIT word.
 */
#define QS_REASON_WORDS(W) \
	W(QS_REASON_LEASE_EXPIRED, "LEASE_EXPIRED") \
	W(QS_REASON_NOT_CLAIMED, "NOT_CLAIMED") \
	W(QS_REASON_RUNNABLE_TIMEOUT, "RUNNABLE_TIMEOUT") \
	W(QS_REASON_RUNNABLE_TIMEOUT_NO_AGENT, "RUNNABLE_TIMEOUT:NO_AGENT_FITS") \
	W(QS_REASON_RELEASED, "RELEASED") \
	W(QS_REASON_WAITING_FOR_HOSTS, "WAITING_FOR_HOSTS") \
	W(QS_REASON_MISCONFIGURATION, "MISCONFIGURATION") \
	W(QS_REASON_DEPENDENCY_FAILED, "DEPENDENCY_FAILED")

/* Which limit a misconfigured job exceeds (scheduling.md 3.7). */
#define QS_MISFIT_WORDS(W) \
	W(QS_MISFIT_ENVIRONMENT, "SERVICE_ENVIRONMENT_MAX_RESOURCE") \
	W(QS_MISFIT_QUOTA, "QUOTA_MANAGEMENT_LIMIT_EXCEEDED")

/* What keeps a job from starting, as explain() says (its blocked_by). */
#define QS_BLOCKED_WORDS(W) \
	W(QS_BLOCKED_QUEUE_LOCKED, "QUEUE_LOCKED") \
	W(QS_BLOCKED_ROW_LOCKED, "ROW_LOCKED") \
	W(QS_BLOCKED_MISCONFIGURATION, "MISCONFIGURATION") \
	W(QS_BLOCKED_WAITING_FOR_VICTIMS, "WAITING_FOR_VICTIMS") \
	W(QS_BLOCKED_ENVIRONMENT_DISABLED, "ENVIRONMENT_DISABLED") \
	W(QS_BLOCKED_SHARE_MISSING, "SHARE_MISSING") \
	W(QS_BLOCKED_BUDGET_EXHAUSTED, "BUDGET_EXHAUSTED") \
	W(QS_BLOCKED_NO_AGENT_FITS, "NO_AGENT_FITS") \
	W(QS_BLOCKED_WAITING_FOR_HOSTS, "WAITING_FOR_HOSTS") \
	W(QS_BLOCKED_CLAIM_BACKOFF, "CLAIM_BACKOFF") \
	W(QS_BLOCKED_DEPENDENCY, "DEPENDENCY") \
	W(QS_BLOCKED_STRICT_HEAD_HELD, "STRICT_HEAD_HELD") \
	W(QS_BLOCKED_OWN_CAPACITY_FULL, "OWN_CAPACITY_FULL") \
	W(QS_BLOCKED_BORROW_LIMIT, "BORROW_LIMIT") \
	W(QS_BLOCKED_ENVIRONMENT_FULL, "ENVIRONMENT_FULL") \
	W(QS_BLOCKED_NO_BORROWABLE_SUPPLY, "NO_BORROWABLE_SUPPLY") \
	W(QS_BLOCKED_OWN_CAPACITY_LENT, "OWN_CAPACITY_LENT") \
	W(QS_BLOCKED_VICTIMS_EXEMPT, "VICTIMS_EXEMPT") \
	W(QS_BLOCKED_WAITING_FOR_AGENT, "WAITING_FOR_AGENT")

typedef enum QsJobState {QS_JOB_STATE_WORDS(QS_WORD_ENUM)} QsJobState;
typedef enum QsStop {QS_STOP_NONE, QS_STOP_WORDS(QS_WORD_ENUM)} QsStop;
typedef enum QsEventKind {QS_EVENT_WORDS(QS_WORD_ENUM)} QsEventKind;
typedef enum QsStrategy {QS_STRATEGY_WORDS(QS_WORD_ENUM)} QsStrategy;
typedef enum QsQueueing {QS_QUEUEING_WORDS(QS_WORD_ENUM)} QsQueueing;
typedef enum QsBorrowOrder {QS_BORROW_ORDER_WORDS(QS_WORD_ENUM)} QsBorrowOrder;
typedef enum QsPeriod {QS_PERIOD_WORDS(QS_WORD_ENUM)} QsPeriod;
typedef enum QsConfigState {QS_CONFIG_STATE_WORDS(QS_WORD_ENUM)} QsConfigState;
typedef enum QsAgentState {QS_AGENT_STATE_WORDS(QS_WORD_ENUM)} QsAgentState;
typedef enum QsPartState {QS_PART_STATE_WORDS(QS_WORD_ENUM)} QsPartState;
typedef enum QsPartEnd {QS_PART_END_WORDS(QS_WORD_ENUM)} QsPartEnd;
typedef enum QsAction {QS_ACTION_WORDS(QS_WORD_ENUM)} QsAction;
typedef enum QsReport {QS_REPORT_WORDS(QS_WORD_ENUM)} QsReport;
typedef enum QsHold {QS_HOLD_NONE, QS_HOLD_WORDS(QS_WORD_ENUM)} QsHold;
typedef enum QsReason {QS_REASON_WORDS(QS_WORD_ENUM)} QsReason;
typedef enum QsMisfit {QS_MISFIT_WORDS(QS_WORD_ENUM)} QsMisfit;
typedef enum QsBlocked {QS_BLOCKED_WORDS(QS_WORD_ENUM)} QsBlocked;

#define QS_JOB_STATE__COUNT (0 QS_JOB_STATE_WORDS(QS_WORD_ONE))
#define QS_JOB_STATE_NAMES__COUNT (QS_JOB_STATE__COUNT QS_JOB_STATE_RESERVED_WORDS(QS_WORD_ONE))
#define QS_STOP__COUNT (0 QS_STOP_WORDS(QS_WORD_ONE))
#define QS_EVENT__COUNT (0 QS_EVENT_WORDS(QS_WORD_ONE))
#define QS_STRATEGY__COUNT (0 QS_STRATEGY_WORDS(QS_WORD_ONE))
#define QS_QUEUEING__COUNT (0 QS_QUEUEING_WORDS(QS_WORD_ONE))
#define QS_BORROW_ORDER__COUNT (0 QS_BORROW_ORDER_WORDS(QS_WORD_ONE))
#define QS_PERIOD__COUNT (0 QS_PERIOD_WORDS(QS_WORD_ONE))
#define QS_CONFIG_STATE__COUNT (0 QS_CONFIG_STATE_WORDS(QS_WORD_ONE))
#define QS_AGENT_STATE__COUNT (0 QS_AGENT_STATE_WORDS(QS_WORD_ONE))
#define QS_PART_STATE__COUNT (0 QS_PART_STATE_WORDS(QS_WORD_ONE))
#define QS_PART_END__COUNT (0 QS_PART_END_WORDS(QS_WORD_ONE))
#define QS_ACTION__COUNT (0 QS_ACTION_WORDS(QS_WORD_ONE))
#define QS_REPORT__COUNT (0 QS_REPORT_WORDS(QS_WORD_ONE))
#define QS_HOLD__COUNT (0 QS_HOLD_WORDS(QS_WORD_ONE))
#define QS_REASON__COUNT (0 QS_REASON_WORDS(QS_WORD_ONE))
#define QS_MISFIT__COUNT (0 QS_MISFIT_WORDS(QS_WORD_ONE))
#define QS_BLOCKED__COUNT (0 QS_BLOCKED_WORDS(QS_WORD_ONE))

/*
 * The kinds of words.  The first ones, to QS_KIND_AGENT_STATE, are held
 * by columns: each has a DOMAIN of its name (sql/words.sql).
 */
typedef enum QsWordKind
{
	QS_KIND_JOB_STATE,			/* job_state */
	QS_KIND_STOP_REASON,		/* stop_reason */
	QS_KIND_EVENT_KIND,			/* event_kind */
	QS_KIND_STRATEGY,			/* strategy */
	QS_KIND_QUEUEING,			/* queueing */
	QS_KIND_BORROW_ORDER,		/* borrow_order */
	QS_KIND_BUDGET_PERIOD,		/* budget_period */
	QS_KIND_CONFIG_STATE,		/* config_state */
	QS_KIND_AGENT_STATE,		/* agent_state */
	QS_KIND_PART_STATE,			/* part_state */
	QS_KIND_PART_END,			/* part_end */
	QS_KIND_ACTION,				/* action */
	QS_KIND_REPORT,				/* report */
	QS_KIND_HOLD,				/* hold */
	QS_KIND_REASON,				/* reason */
	QS_KIND_MISFIT,				/* misconfiguration */
	QS_KIND_BLOCKED_BY,			/* blocked_by */
	QS_KIND__COUNT
} QsWordKind;

/* The last kind that columns hold (a DOMAIN of its name). */
#define QS_KIND_LAST_STORED QS_KIND_PART_END

extern const char *QsKindName(QsWordKind kind);
extern bool QsKindFromName(const char *name, QsWordKind *kind);
extern int	QsKindWords(QsWordKind kind);
extern int	QsKindFirst(QsWordKind kind);
extern const char *QsWordName(QsWordKind kind, int value);
extern bool QsWordFromName(QsWordKind kind, const char *name, int *value);

/*
 * The name of each kind's value, and the value of a name (false: none of
 * the kind's words; *value is left alone).  Names are static text.
 */
static inline const char *
QsJobStateName(QsJobState state)
{
	return QsWordName(QS_KIND_JOB_STATE, (int) state);
}

static inline bool
QsJobStateFromName(const char *name, QsJobState *state)
{
	int			v;

	if (!QsWordFromName(QS_KIND_JOB_STATE, name, &v) || v >= QS_JOB_STATE__COUNT)
		return false;		/* a reserved name is no state */
	*state = (QsJobState) v;
	return true;
}

/* The stop_reason of a stop; NULL for QS_STOP_NONE. */
static inline const char *
QsStopName(QsStop stop)
{
	return stop == QS_STOP_NONE ? NULL : QsWordName(QS_KIND_STOP_REASON, (int) stop);
}

/* The stop of a stop_reason; a NULL name is QS_STOP_NONE. */
static inline bool
QsStopFromName(const char *name, QsStop *stop)
{
	int			v;

	if (name == NULL)
	{
		*stop = QS_STOP_NONE;
		return true;
	}
	if (!QsWordFromName(QS_KIND_STOP_REASON, name, &v))
		return false;
	*stop = (QsStop) v;
	return true;
}

static inline const char *
QsEventKindName(QsEventKind kind)
{
	return QsWordName(QS_KIND_EVENT_KIND, (int) kind);
}

static inline const char *
QsStrategyName(QsStrategy strategy)
{
	return QsWordName(QS_KIND_STRATEGY, (int) strategy);
}

static inline const char *
QsQueueingName(QsQueueing queueing)
{
	return QsWordName(QS_KIND_QUEUEING, (int) queueing);
}

static inline const char *
QsBorrowOrderName(QsBorrowOrder order)
{
	return QsWordName(QS_KIND_BORROW_ORDER, (int) order);
}

static inline const char *
QsPeriodName(QsPeriod period)
{
	return QsWordName(QS_KIND_BUDGET_PERIOD, (int) period);
}

static inline bool
QsPeriodFromName(const char *name, QsPeriod *period)
{
	int			v;

	if (!QsWordFromName(QS_KIND_BUDGET_PERIOD, name, &v))
		return false;
	*period = (QsPeriod) v;
	return true;
}

static inline const char *
QsConfigStateName(QsConfigState state)
{
	return QsWordName(QS_KIND_CONFIG_STATE, (int) state);
}

static inline const char *
QsAgentStateName(QsAgentState state)
{
	return QsWordName(QS_KIND_AGENT_STATE, (int) state);
}

static inline const char *
QsPartStateName(QsPartState state)
{
	return QsWordName(QS_KIND_PART_STATE, (int) state);
}

static inline const char *
QsPartEndName(QsPartEnd end)
{
	return QsWordName(QS_KIND_PART_END, (int) end);
}

static inline const char *
QsActionName(QsAction action)
{
	return QsWordName(QS_KIND_ACTION, (int) action);
}

static inline const char *
QsReportName(QsReport report)
{
	return QsWordName(QS_KIND_REPORT, (int) report);
}

/* The name of a hold; NULL for QS_HOLD_NONE. */
static inline const char *
QsHoldName(QsHold hold)
{
	return hold == QS_HOLD_NONE ? NULL : QsWordName(QS_KIND_HOLD, (int) hold);
}

static inline const char *
QsReasonName(QsReason reason)
{
	return QsWordName(QS_KIND_REASON, (int) reason);
}

static inline const char *
QsMisfitName(QsMisfit misfit)
{
	return QsWordName(QS_KIND_MISFIT, (int) misfit);
}

static inline const char *
QsBlockedName(QsBlocked blocked)
{
	return QsWordName(QS_KIND_BLOCKED_BY, (int) blocked);
}

#endif							/* QS_WORDS_H */

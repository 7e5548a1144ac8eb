/*-------------------------------------------------------------------------
 *
 * words.c
 *		The tables of names of every kind of word (words.h), made from the
 *		kinds' lists, and the lookups both ways.
 *
 *-------------------------------------------------------------------------
 */
#include <string.h>

#include "words.h"

#define QS_LENGTHOF(array) ((int) (sizeof(array) / sizeof((array)[0])))

/*
 * One table per kind, from its list, and the check that it has as many
 * names as the kind has words.
 */
static const char *const JobStateNames[] = {
	QS_JOB_STATE_WORDS(QS_WORD_NAME) QS_JOB_STATE_RESERVED_WORDS(QS_WORD_NAME)
};
static const char *const StopNames[] = {QS_STOP_WORDS(QS_WORD_NAME)};
static const char *const EventKindNames[] = {QS_EVENT_WORDS(QS_WORD_NAME)};
static const char *const StrategyNames[] = {QS_STRATEGY_WORDS(QS_WORD_NAME)};
static const char *const QueueingNames[] = {QS_QUEUEING_WORDS(QS_WORD_NAME)};
static const char *const BorrowOrderNames[] = {QS_BORROW_ORDER_WORDS(QS_WORD_NAME)};
static const char *const PeriodNames[] = {QS_PERIOD_WORDS(QS_WORD_NAME)};
static const char *const ConfigStateNames[] = {QS_CONFIG_STATE_WORDS(QS_WORD_NAME)};
static const char *const AgentStateNames[] = {QS_AGENT_STATE_WORDS(QS_WORD_NAME)};
static const char *const PartStateNames[] = {QS_PART_STATE_WORDS(QS_WORD_NAME)};
static const char *const PartEndNames[] = {QS_PART_END_WORDS(QS_WORD_NAME)};
static const char *const ActionNames[] = {QS_ACTION_WORDS(QS_WORD_NAME)};
static const char *const ReportNames[] = {QS_REPORT_WORDS(QS_WORD_NAME)};
static const char *const HoldNames[] = {QS_HOLD_WORDS(QS_WORD_NAME)};
static const char *const ReasonNames[] = {QS_REASON_WORDS(QS_WORD_NAME)};
static const char *const MisfitNames[] = {QS_MISFIT_WORDS(QS_WORD_NAME)};
static const char *const BlockedNames[] = {QS_BLOCKED_WORDS(QS_WORD_NAME)};

_Static_assert(QS_LENGTHOF(JobStateNames) == QS_JOB_STATE_NAMES__COUNT,
			   "a job state without its name");
_Static_assert(QS_LENGTHOF(StopNames) == QS_STOP__COUNT, "a stop reason without its name");
_Static_assert(QS_LENGTHOF(EventKindNames) == QS_EVENT__COUNT, "an event kind without its name");
_Static_assert(QS_LENGTHOF(StrategyNames) == QS_STRATEGY__COUNT, "a strategy without its name");
_Static_assert(QS_LENGTHOF(QueueingNames) == QS_QUEUEING__COUNT, "a queueing without its name");
_Static_assert(QS_LENGTHOF(BorrowOrderNames) == QS_BORROW_ORDER__COUNT,
			   "a borrow order without its name");
_Static_assert(QS_LENGTHOF(PeriodNames) == QS_PERIOD__COUNT, "a budget period without its name");
_Static_assert(QS_LENGTHOF(ConfigStateNames) == QS_CONFIG_STATE__COUNT,
			   "a configuration state without its name");
_Static_assert(QS_LENGTHOF(AgentStateNames) == QS_AGENT_STATE__COUNT,
			   "an agent state without its name");
_Static_assert(QS_LENGTHOF(PartStateNames) == QS_PART_STATE__COUNT,
			   "a part state without its name");
_Static_assert(QS_LENGTHOF(PartEndNames) == QS_PART_END__COUNT, "a part end without its name");
_Static_assert(QS_LENGTHOF(ActionNames) == QS_ACTION__COUNT, "an action without its name");
_Static_assert(QS_LENGTHOF(ReportNames) == QS_REPORT__COUNT, "a report without its name");
_Static_assert(QS_LENGTHOF(HoldNames) == QS_HOLD__COUNT, "a hold without its name");
_Static_assert(QS_LENGTHOF(ReasonNames) == QS_REASON__COUNT, "a reason without its name");
_Static_assert(QS_LENGTHOF(MisfitNames) == QS_MISFIT__COUNT, "a misfit without its name");
_Static_assert(QS_LENGTHOF(BlockedNames) == QS_BLOCKED__COUNT, "a blocked_by without its name");

/* A kind: its name (its DOMAIN's, for the kinds that columns hold) and words. */
typedef struct WordKind
{
	const char *name;
	const char *const *words;
	int			count;
	int			first;			/* the value of the first word: 1 after a "none"
								 * constant (QS_STOP_NONE, QS_HOLD_NONE) */
} WordKind;

static const WordKind Kinds[] = {
	[QS_KIND_JOB_STATE] = {"job_state", JobStateNames, QS_JOB_STATE_NAMES__COUNT, 0},
	[QS_KIND_STOP_REASON] = {"stop_reason", StopNames, QS_STOP__COUNT, 1},
	[QS_KIND_EVENT_KIND] = {"event_kind", EventKindNames, QS_EVENT__COUNT, 0},
	[QS_KIND_STRATEGY] = {"strategy", StrategyNames, QS_STRATEGY__COUNT, 0},
	[QS_KIND_QUEUEING] = {"queueing", QueueingNames, QS_QUEUEING__COUNT, 0},
	[QS_KIND_BORROW_ORDER] = {"borrow_order", BorrowOrderNames, QS_BORROW_ORDER__COUNT, 0},
	[QS_KIND_BUDGET_PERIOD] = {"budget_period", PeriodNames, QS_PERIOD__COUNT, 0},
	[QS_KIND_CONFIG_STATE] = {"config_state", ConfigStateNames, QS_CONFIG_STATE__COUNT, 0},
	[QS_KIND_AGENT_STATE] = {"agent_state", AgentStateNames, QS_AGENT_STATE__COUNT, 0},
	[QS_KIND_PART_STATE] = {"part_state", PartStateNames, QS_PART_STATE__COUNT, 0},
	[QS_KIND_PART_END] = {"part_end", PartEndNames, QS_PART_END__COUNT, 0},
	[QS_KIND_ACTION] = {"action", ActionNames, QS_ACTION__COUNT, 0},
	[QS_KIND_REPORT] = {"report", ReportNames, QS_REPORT__COUNT, 0},
	[QS_KIND_HOLD] = {"hold", HoldNames, QS_HOLD__COUNT, 1},
	[QS_KIND_REASON] = {"reason", ReasonNames, QS_REASON__COUNT, 0},
	[QS_KIND_MISFIT] = {"misconfiguration", MisfitNames, QS_MISFIT__COUNT, 0},
	[QS_KIND_BLOCKED_BY] = {"blocked_by", BlockedNames, QS_BLOCKED__COUNT, 0},
};

_Static_assert(QS_LENGTHOF(Kinds) == QS_KIND__COUNT, "a kind of word without its table");

/* QsKindName: the name of a kind of word (of its DOMAIN, if it has one). */
const char *
QsKindName(QsWordKind kind)
{
	return Kinds[kind].name;
}

/* QsKindFromName: the kind of a name; false if none has it. */
bool
QsKindFromName(const char *name, QsWordKind *kind)
{
	for (int k = 0; k < QS_KIND__COUNT; k++)
		if (strcmp(name, Kinds[k].name) == 0)
		{
			*kind = (QsWordKind) k;
			return true;
		}
	return false;
}

/* QsKindWords: how many words a kind has. */
int
QsKindWords(QsWordKind kind)
{
	return Kinds[kind].count;
}

/* QsKindFirst: the value of a kind's first word (its words are consecutive). */
int
QsKindFirst(QsWordKind kind)
{
	return Kinds[kind].first;
}

/* QsWordName: the name of a kind's value (static text). */
const char *
QsWordName(QsWordKind kind, int value)
{
	return Kinds[kind].words[value - Kinds[kind].first];
}

/*
 * QsWordFromName sets *value to the value of a kind's word; false when the
 * name is none of its words (*value is left alone).
 */
bool
QsWordFromName(QsWordKind kind, const char *name, int *value)
{
	const WordKind *k = &Kinds[kind];

	for (int i = 0; i < k->count; i++)
		if (strcmp(name, k->words[i]) == 0)
		{
			*value = k->first + i;
			return true;
		}
	return false;
}

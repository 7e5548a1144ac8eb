/*-------------------------------------------------------------------------
 *
 * config_store.c
 *		The configuration store (config_store.h): environments, queues and
 *		shares as typed rows, decoded by column name.
 *
 * Each table's rows are read whole (its row type, or SELECT *): no
 * statement names a column of the configuration, and a column is found
 * by its name, once per read.  Each kind of row has one table of fields
 * below: a column's name, its type in C, where it goes in the row.  A new
 * column is one line there (and its field in the row, or in the policy
 * core's QsShare for an option of a share that the pass obeys).
 *
 * A word column holding none of its kind's words (words.h) raises
 * invalid_text_representation, naming the row: the tables' CHECKs refuse
 * such a value, so only a list of words that differs between the core and
 * the database (sql/words.sql) leads here.  A column the table lacks (a
 * database whose extension is not updated yet) leaves its field zero.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"
#include "utils/typcache.h"

#include "checks.h"
#include "config_store.h"
#include "query.h"
#include "word_io.h"

/* What a field of a row is in C. */
typedef enum FieldType
{
	F_TEXT,						/* char *, from text or name; NULL when null */
	F_BOOL,						/* bool */
	F_INT32,					/* int32 */
	F_JSONB,					/* Jsonb *, copied; NULL when null */
	F_INTERVAL,					/* Interval *, copied; NULL when null */
	F_USECS,					/* QsTime: an interval in microseconds; 0 when null */
	F_WORD,						/* an enum of a kind of word (words.h) */
	F_IS_WORD,					/* bool: the value is one given word of its kind */
	F_IDS						/* QsIds, from an int8[] of non-null ids */
} FieldType;

/* A field of a row: the column it comes from, and where it goes. */
typedef struct Field
{
	const char *column;
	FieldType	type;
	size_t		offset;
	QsWordKind	kind;			/* F_WORD, F_IS_WORD */
	int			word;			/* F_IS_WORD: the word that means true */
} Field;

/* The fields of a kind of row, and how its rows are named in messages. */
typedef struct RowKind
{
	const char *what;			/* "quota share" */
	const Field *fields;
	int			nfields;
	size_t		name_offset;	/* of the char * that names a row */
} RowKind;

/* Every enum of a word is stored as an int (F_WORD). */
StaticAssertDecl(sizeof(QsStrategy) == sizeof(int) && sizeof(QsBorrowOrder) == sizeof(int) &&
				 sizeof(QsPeriod) == sizeof(int), "an enum of words is not an int");

#define ENV(f) offsetof(QsEnvironmentConfig, f)
static const Field EnvironmentFields[] = {
	{"name", F_TEXT, ENV(name)},
	{"capacity_limits", F_JSONB, ENV(capacity_limits)},
	{"state", F_IS_WORD, ENV(enabled), QS_KIND_CONFIG_STATE, QS_ENABLED},
};

#define QUEUE(f) offsetof(QsQueueConfig, f)
static const Field QueueFields[] = {
	{"name", F_TEXT, QUEUE(name)},
	{"service_environment", F_TEXT, QUEUE(service_environment)},
	{"state", F_IS_WORD, QUEUE(enabled), QS_KIND_CONFIG_STATE, QS_ENABLED},
	{"runnable_timeout", F_INTERVAL, QUEUE(runnable_timeout)},
	{"borrow_order", F_WORD, QUEUE(borrow_order), QS_KIND_BORROW_ORDER},
	{"claim_timeout", F_INTERVAL, QUEUE(claim_timeout)},
	{"fair_half_life", F_INTERVAL, QUEUE(fair_half_life)},
	{"fence_grace", F_USECS, QUEUE(fence_grace)},
};

#define SHARE(f) offsetof(QsShareConfig, f)
#define POLICY(f) offsetof(QsShareConfig, policy.f)
static const Field ShareFields[] = {
	{"job_queue", F_TEXT, SHARE(job_queue)},
	{"name", F_TEXT, POLICY(name)},
	{"capacity_limits", F_JSONB, SHARE(capacity_limits)},
	{"strategy", F_WORD, POLICY(strategy), QS_KIND_STRATEGY},
	{"borrow_limit", F_INT32, POLICY(borrow_limit)},
	{"in_share_preemption", F_BOOL, POLICY(in_share_preemption)},
	{"state", F_IS_WORD, POLICY(enabled), QS_KIND_CONFIG_STATE, QS_ENABLED},
	{"submit_role", F_TEXT, SHARE(submit_role)},
	{"lend_limit", F_INT32, POLICY(lend_limit)},
	{"queueing", F_IS_WORD, POLICY(strict), QS_KIND_QUEUEING, QS_STRICT},
	{"min_runtime", F_USECS, POLICY(min_runtime)},
	{"weight", F_INT32, POLICY(weight)},
	{"budget", F_JSONB, SHARE(budget)},
	{"budget_period", F_WORD, SHARE(budget_period), QS_KIND_BUDGET_PERIOD},
};

#define STATUS(f) offsetof(QsQueueStatus, f)
static const Field StatusFields[] = {
	{"passed_over", F_IDS, STATUS(passed_over)},
	{"passed_over_passes", F_INT32, STATUS(passed_over_passes)},
};

static const RowKind Environments = {"service environment", EnvironmentFields,
lengthof(EnvironmentFields), ENV(name)};
static const RowKind Queues = {"job queue", QueueFields, lengthof(QueueFields), QUEUE(name)};
static const RowKind Shares = {"quota share", ShareFields, lengthof(ShareFields), POLICY(name)};
static const RowKind Statuses = {"queue status", StatusFields, lengthof(StatusFields), 0};

/*
 * The columns of a kind of row in a row type: [field] attnum, 0 if none;
 * and room for a row's values, deformed at once (heap_getattr would walk
 * the row from its start for each column after a varlena).
 */
typedef struct Columns
{
	TupleDesc	desc;
	AttrNumber	attnums[lengthof(ShareFields)];
	Datum	   *values;
	bool	   *nulls;
} Columns;

StaticAssertDecl(lengthof(ShareFields) >= lengthof(QueueFields) &&
				 lengthof(ShareFields) >= lengthof(EnvironmentFields),
				 "Columns.attnums is too short");

/* FindColumns finds the column of each field of a kind of row in desc. */
static void
FindColumns(const RowKind *kind, TupleDesc desc, Columns *cols)
{
	cols->desc = desc;
	cols->values = palloc(sizeof(Datum) * (desc->natts + 1));
	cols->nulls = palloc(sizeof(bool) * (desc->natts + 1));
	for (int f = 0; f < kind->nfields; f++)
	{
		cols->attnums[f] = 0;
		for (int i = 0; i < desc->natts; i++)
			if (!TupleDescAttr(desc, i)->attisdropped &&
				strcmp(NameStr(TupleDescAttr(desc, i)->attname), kind->fields[f].column) == 0)
				cols->attnums[f] = i + 1;
	}
}

/*
 * DecodeWord returns the value of a word field, or raises
 * invalid_text_representation naming the row (its name decoded before).
 */
static int
DecodeWord(const RowKind *kind, const Field *field, Datum value, bool isnull, void *row)
{
	const char *name = isnull ? "" : TextDatumGetCString(value);
	int			word;

	if (!isnull && QsWordFromName(field->kind, name, &word))
		return word;
	QsUnknownWord(ERRCODE_INVALID_TEXT_REPRESENTATION, field->kind, name,
				  psprintf("%s \"%s\"", kind->what,
						   *(char **) ((char *) row + kind->name_offset)));
}

/*
 * DecodeIds returns the ids of an int8[] column (none when null), which
 * only the extension writes: one dimension, no null.
 */
static QsIds
DecodeIds(const Field *field, Datum value, bool isnull)
{
	QsIds		ids = {NULL, 0};
	ArrayType  *a;

	if (isnull)
		return ids;
	a = DatumGetArrayTypePCopy(value);
	if (ARR_ELEMTYPE(a) != INT8OID || ARR_NDIM(a) > 1 || ARR_HASNULL(a))
		elog(ERROR, "quota_sched: the column %s is malformed", field->column);
	ids.n = ArrayGetNItems(ARR_NDIM(a), ARR_DIMS(a));
	ids.ids = (int64 *) ARR_DATA_PTR(a);
	return ids;
}

/* DecodeField stores a column's value into its field of the row. */
static void
DecodeField(const RowKind *kind, const Field *field, Form_pg_attribute att, Datum value,
			bool isnull, void *row)
{
	char	   *at = (char *) row + field->offset;

	switch (field->type)
	{
		case F_TEXT:
			*(char **) at = isnull ? NULL : att->atttypid == NAMEOID ?
				pstrdup(NameStr(*DatumGetName(value))) : TextDatumGetCString(value);
			break;
		case F_BOOL:
			*(bool *) at = !isnull && DatumGetBool(value);
			break;
		case F_INT32:
			*(int32 *) at = isnull ? 0 : DatumGetInt32(value);
			break;
		case F_JSONB:
			*(Jsonb **) at = isnull ? NULL : DatumGetJsonbPCopy(value);
			break;
		case F_INTERVAL:
			*(Interval **) at = isnull ? NULL :
				DatumGetIntervalP(datumCopy(value, false, sizeof(Interval)));
			break;
		case F_USECS:
			*(QsTime *) at = isnull ? 0 : QsIntervalUsecs(DatumGetIntervalP(value));
			break;
		case F_WORD:
			*(int *) at = DecodeWord(kind, field, value, isnull, row);
			break;
		case F_IS_WORD:
			*(bool *) at = DecodeWord(kind, field, value, isnull, row) == field->word;
			break;
		case F_IDS:
			*(QsIds *) at = DecodeIds(field, value, isnull);
			break;
	}
}

/*
 * DecodeRow decodes a row of a kind (its columns found in cols) into row,
 * zeroed first, in the current memory context.
 */
static void
DecodeRow(const RowKind *kind, const Columns *cols, HeapTuple tuple, void *row, size_t size)
{
	memset(row, 0, size);
	heap_deform_tuple(tuple, cols->desc, cols->values, cols->nulls);
	for (int f = 0; f < kind->nfields; f++)
	{
		AttrNumber	attnum = cols->attnums[f];

		if (attnum == 0)
			continue;			/* a column the table lacks (not updated yet) */
		DecodeField(kind, &kind->fields[f], TupleDescAttr(cols->desc, attnum - 1),
					cols->values[attnum - 1], cols->nulls[attnum - 1], row);
	}
}

/*
 * DecodeComposite decodes a whole row of a table, a column of the result
 * (SELECT q FROM ... q), into row; false when it is null (an outer join
 * found none).
 */
static bool
DecodeComposite(const RowKind *kind, HeapTuple result, int column, void *row, size_t size)
{
	bool		isnull;
	Datum		value = SPI_getbinval(result, SPI_tuptable->tupdesc, column, &isnull);
	HeapTupleHeader header;
	HeapTupleData tuple;
	Columns		cols;

	if (isnull)
		return false;
	header = DatumGetHeapTupleHeader(value);
	tuple.t_len = HeapTupleHeaderGetDatumLength(header);
	ItemPointerSetInvalid(&tuple.t_self);
	tuple.t_tableOid = InvalidOid;
	tuple.t_data = header;
	FindColumns(kind, lookup_rowtype_tupdesc(HeapTupleHeaderGetTypeId(header),
											 HeapTupleHeaderGetTypMod(header)), &cols);
	DecodeRow(kind, &cols, &tuple, row, size);
	ReleaseTupleDesc(cols.desc);
	return true;
}

/* RunRead runs a read of the store as how says. */
static uint64
RunRead(QsQuery *query, Datum *args, QsConfigRead how)
{
	if (how.snapshot != NULL)
		return QsQueryRunIn(query, args, NULL, how.snapshot, 0);
	return QsQueryRun(query, args, NULL, how.read_only, 0);
}

/* A queue's row, its environment's and its queue_status (if any). */
static QsQuery QueueQuery = {
	"SELECT q, e, st FROM quota_sched.job_queue q"
	"  JOIN quota_sched.service_environment e ON e.name = q.service_environment"
	"  LEFT JOIN quota_sched.queue_status st ON st.job_queue = q.name"
	" WHERE q.name = $1",
	1, {TEXTOID}, SPI_OK_SELECT
};

/*
 * QsReadQueueConfig reads a queue's row, its environment's and (status
 * not NULL) its queue_status, all zero when it has none, into the current
 * memory context.  Returns false when the queue does not exist.
 */
bool
QsReadQueueConfig(const char *queue, QsConfigRead how, QsQueueConfig *config,
				  QsEnvironmentConfig *environment, QsQueueStatus *status)
{
	Datum		arg = CStringGetTextDatum(queue);
	HeapTuple	row;

	if (RunRead(&QueueQuery, &arg, how) == 0)
		return false;
	row = SPI_tuptable->vals[0];
	DecodeComposite(&Queues, row, 1, config, sizeof(*config));
	DecodeComposite(&Environments, row, 2, environment, sizeof(*environment));
	if (status != NULL && !DecodeComposite(&Statuses, row, 3, status, sizeof(*status)))
		memset(status, 0, sizeof(*status));
	return true;
}

/* A queue's shares, in the C order of their names. */
static QsQuery SharesQuery = {
	"SELECT * FROM quota_sched.quota_share WHERE job_queue = $1 ORDER BY name COLLATE \"C\"",
	1, {TEXTOID}, SPI_OK_SELECT
};

/*
 * SameUnitNames makes each unit of a capacity map that has the name of the
 * unit at its place in another (jsonb keeps an object's keys in one order)
 * that unit's string: a pass then knows shares with the same units by
 * their pointers (QsSameUnits), not by comparing names share by share.
 */
static void
SameUnitNames(QsCapacities *c, const QsCapacities *before)
{
	for (int k = 0; k < c->n && k < before->n; k++)
		if (strcmp(c->units[k], before->units[k]) == 0)
			c->units[k] = before->units[k];
}

/*
 * QsSameUnits tells whether two capacity maps read together have the same
 * units in the same order, by their strings (SameUnitNames): false says
 * nothing.
 */
bool
QsSameUnits(const QsCapacities *a, const QsCapacities *b)
{
	if (a == NULL || b == NULL || a->n != b->n)
		return false;
	for (int k = 0; k < a->n; k++)
		if (a->units[k] != b->units[k])
			return false;
	return true;
}

/*
 * QsReadShareConfigs reads a queue's shares, in the C order of their
 * names, into the current memory context, and returns how many; a share
 * whose budget is the empty map has none (NULL).  The units of shares
 * with the same units (of their capacity maps, of their budgets) are the
 * same strings (SameUnitNames).
 */
int
QsReadShareConfigs(const char *queue, QsConfigRead how, QsShareConfig **shares)
{
	MemoryContext outer = CurrentMemoryContext;
	Datum		arg = CStringGetTextDatum(queue);
	uint64		n = RunRead(&SharesQuery, &arg, how);
	Columns		cols;

	MemoryContextSwitchTo(outer);	/* SPI left its own current */
	*shares = palloc0(sizeof(QsShareConfig) * (n + 1));
	FindColumns(&Shares, SPI_tuptable->tupdesc, &cols);
	for (uint64 i = 0; i < n; i++)
	{
		QsShareConfig *s = &(*shares)[i];

		DecodeRow(&Shares, &cols, SPI_tuptable->vals[i], s, sizeof(*s));
		if (s->budget != NULL && JB_ROOT_COUNT(s->budget) == 0)
			s->budget = NULL;
		s->capacities = QsDecodeCapacities(s->capacity_limits, false);
		s->budgets = QsDecodeCapacities(s->budget, true);
		if (i > 0)
		{
			SameUnitNames(&s->capacities, &(*shares)[i - 1].capacities);
			SameUnitNames(&s->budgets, &(*shares)[i - 1].budgets);
		}
	}
	return (int) n;
}

/*
 * QsDecodeCapacities decodes a capacity map (NULL: none) into the current
 * memory context: every key is a unit, in the map's order, with its
 * number as an int8, or 0 when its value is not a number.  A budget map
 * (budget): each unit's budget in thousandths of an instance-hour, or -1
 * when its value is not one (QsBudgetThousandths).
 */
QsCapacities
QsDecodeCapacities(Jsonb *map, bool budget)
{
	QsCapacities c = {0, NULL, NULL};
	int			most = map != NULL && JB_ROOT_IS_OBJECT(map) ? JB_ROOT_COUNT(map) : 0;
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;

	c.units = palloc(sizeof(char *) * (most + 1));
	c.caps = palloc0(sizeof(int64) * (most + 1));
	if (most == 0)
		return c;
	it = JsonbIteratorInit(&map->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok == WJB_KEY && c.n < most)
			c.units[c.n++] = pnstrdup(v.val.string.val, v.val.string.len);
		else if (tok == WJB_VALUE && c.n > 0 && budget)
			c.caps[c.n - 1] = QsBudgetThousandths(&v);
		else if (tok == WJB_VALUE && c.n > 0 && v.type == jbvNumeric)
			c.caps[c.n - 1] = DatumGetInt64(DirectFunctionCall1(numeric_int8,
																NumericGetDatum(v.val.numeric)));
	}
	return c;
}

/* QsCapacityOfUnit returns the capacity of a unit in a decoded map (0: absent). */
int64
QsCapacityOfUnit(const QsCapacities *capacities, const char *unit)
{
	for (int i = 0; i < capacities->n; i++)
		if (strcmp(capacities->units[i], unit) == 0)
			return capacities->caps[i];
	return 0;
}

/* What a submission to (queue $1, share $2) is checked against. */
static QsQuery SubmitQuery = {
	"SELECT q, e, s FROM quota_sched.job_queue q"
	"  JOIN quota_sched.service_environment e ON e.name = q.service_environment"
	"  LEFT JOIN quota_sched.quota_share s ON s.job_queue = q.name AND s.name = $2"
	" WHERE q.name = $1",
	2, {TEXTOID, TEXTOID}, SPI_OK_SELECT
};

/*
 * QsReadSubmitConfig reads a queue's row, its environment's and one of
 * its shares' (*share_found: whether it has it) into the current memory
 * context.  Returns false when the queue does not exist.
 */
bool
QsReadSubmitConfig(const char *queue, const char *share, QsConfigRead how,
				   QsQueueConfig *config, QsEnvironmentConfig *environment,
				   QsShareConfig *share_config, bool *share_found)
{
	Datum		args[2] = {CStringGetTextDatum(queue), CStringGetTextDatum(share)};
	HeapTuple	row;

	if (RunRead(&SubmitQuery, args, how) == 0)
		return false;
	row = SPI_tuptable->vals[0];
	DecodeComposite(&Queues, row, 1, config, sizeof(*config));
	DecodeComposite(&Environments, row, 2, environment, sizeof(*environment));
	*share_found = DecodeComposite(&Shares, row, 3, share_config, sizeof(*share_config));
	return true;
}

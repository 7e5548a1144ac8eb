/*-------------------------------------------------------------------------
 *
 * query.h
 *		A statement of the extension and its saved plan, side by side.
 *
 * Each statement the shell runs is a static QsQuery written where it is
 * used: its SQL, its argument types, and the plan prepared from them on
 * first use and kept for the session.  The SQL and its plan slot are one
 * object, so they cannot drift apart.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_QUERY_H
#define QS_QUERY_H

#include "executor/spi.h"
#include "utils/snapshot.h"

#define QS_QUERY_MAX_ARGS 10

/*
 * A statement to run through SPI, with its saved plan.  Run each one
 * always as the extension's owner (QsBecomeOwner) or always not: a saved
 * plan of a table with row-level security is made again whenever the role
 * or the search_path differs from the last run's.
 */
typedef struct QsQuery
{
	const char *sql;			/* names every relation with its schema */
	int			nargs;
	Oid			types[QS_QUERY_MAX_ARGS];
	int			expect;			/* SPI_OK_* code of a successful run */
	SPIPlanPtr	plan;			/* prepared on first use, then kept */
	bool		by_ids;			/* $1 is an array of job ids (QsQueryPlan) */
	uint64		generation;		/* of the plans (QsQueryPlan) */
	SPIPlanPtr	custom;			/* by_ids: planned for each run of many ids */
	bool		walk;			/* planned as an ordered index walk (QsQueryRun) */
} QsQuery;

/*
 * The tail of a QsQuery whose plan must be an ordered walk of an index
 * (QsQueryRun), whatever the statistics say.
 */
#define QS_INDEX_WALK .walk = true

/* The tail of a QsQuery whose first argument is an array of job ids. */
#define QS_BY_IDS NULL, true

/* by_ids: at most this many ids run the generic plan (QsQueryPlan) */
#define QS_GENERIC_IDS_MAX 32

/* An array argument under construction, of one SQL type (QsArrayInit). */
typedef struct QsArray
{
	Oid			type;
	int			n;
	int			cap;			/* room for this many; QsArrayPush grows it */
	Datum	   *values;
	bool	   *nulls;
} QsArray;

extern void QsArrayInit(QsArray *a, Oid type, int cap);
extern void QsArrayPush(QsArray *a, Datum value, bool isnull);
extern Datum QsArrayDatum(QsArray *a);
extern bool QsListHasName(const List *names, const char *name);

extern uint64 QsQueryRun(QsQuery *query, Datum *args, const char *nulls,
						 bool read_only, long count);
extern uint64 QsQueryRunIn(QsQuery *query, Datum *args, const char *nulls,
						   Snapshot snapshot, long count);

#endif							/* QS_QUERY_H */

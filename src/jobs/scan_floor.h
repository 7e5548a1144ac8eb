/*-------------------------------------------------------------------------
 *
 * scan_floor.h
 *		Floors of the ordered scans of jobs that claims and passes repeat:
 *		where a scan may start, so that it does not walk again the index
 *		entries of row versions a long transaction keeps (scan_floor.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_SCAN_FLOOR_H
#define QS_SCAN_FLOOR_H

#include "access/xact.h"
#include "access/htup.h"
#include "access/tupdesc.h"
#include "nodes/pg_list.h"
#include "utils/snapshot.h"

/*
 * The scans with a floor, each an ordered walk of a partial index:
 * CLAIMABLE, the SCHEDULED jobs no agent holds and none is placed on
 * (job_claimable, by scheduled_at and id; per unit, and over all units,
 * unit ""); UNCLAIMED, the SCHEDULED jobs no agent holds (job_claimable,
 * per queue); LAPSED, the held jobs by lease_until (job_lease, per queue;
 * the other parts of its key are 0); RUNNABLE, the RUNNABLE jobs of a
 * share and unit in share order (job_runnable_share_order, by -priority,
 * queued_at and id), whose floors PAIRS says are every pair of the queue
 * with RUNNABLE jobs (QsFloorReadPairs).
 */
typedef enum QsFloorKind
{
	QS_FLOOR_CLAIMABLE,
	QS_FLOOR_UNCLAIMED,
	QS_FLOOR_LAPSED,
	QS_FLOOR_RUNNABLE,
	QS_FLOOR_PAIRS
} QsFloorKind;

/* A key of a scan, in its index's order; PG_INT64_MAX in each: past every row. */
#define QS_FLOOR_TOP(v) ((v).k[0] == PG_INT64_MAX && (v).k[1] == PG_INT64_MAX && \
						 (v).k[2] == PG_INT64_MAX)
typedef struct QsFloorKeyValue
{
	int64		k[3];
} QsFloorKeyValue;

/* Past every key: a scan that finds nothing. */
extern const QsFloorKeyValue QsFloorTop;

/* The key of a RUNNABLE job in share order: (-priority, queued_at, id). */
static inline QsFloorKeyValue
QsFloorJobKey(int32 priority, int64 queued_at, int64 id)
{
	QsFloorKeyValue key = {{-(int64) priority, queued_at, id}};

	return key;
}

/* What a reader saw of a floor before its scan's snapshot (QsFloorRead). */
typedef struct QsFloorSeen
{
	bool		valid;			/* false: start from the beginning */
	bool		own;			/* this transaction moved rows into the scan */
	uint64		gen;
	QsFloorKeyValue floor;
} QsFloorSeen;

/*
 * The floors of the RUNNABLE jobs of a queue's shares and units, as a pass
 * reads them before its snapshot (QsFloorReadPairs), then the first job of
 * each in its snapshot (QsFloorProbePairs).
 */
typedef struct QsPairFloor
{
	char	   *share;
	char	   *unit;
	QsFloorSeen seen;
	QsFloorKeyValue first;		/* top: none */
	struct FloorEntry *entry;	/* its floor in shared memory, NULL: none */
	/*
	 * Before the snapshot: the commits that wrote its RUNNABLE jobs, counted
	 * as they begin (QsFloorTouches), and whether none was under way then, nor
	 * a TRUNCATE of the jobs, nor did this transaction write them (settled:
	 * what the snapshot reads of them may be kept, with touches and wipes).
	 */
	uint64		touches;
	bool		settled;
} QsPairFloor;

typedef struct QsPairFloors
{
	char	   *queue;
	QsFloorSeen marker;			/* valid: pairs[] has every pair with jobs */
	struct FloorEntry *marker_entry;	/* the marker's floor, NULL: none */
	int			n;
	QsPairFloor *pairs;
	List	   *listed;			/* QsFloorProbePairs: share, unit, ... */
	uint64		wipes;			/* TRUNCATEs of the jobs begun, before the snapshot */
} QsPairFloors;

extern void QsScanFloorRegister(void);
extern void QsFloorNoteSubmitted(TupleDesc desc, HeapTuple row);
extern QsPairFloors QsFloorReadPairs(const char *queue);
extern void QsFloorSetPairs(QsPairFloors *pf, List *pairs);
extern void QsFloorProbePairs(QsPairFloors *pf, Snapshot snapshot);
extern int	QsFloorToProbe(const QsPairFloors *pf, int **which);
extern void QsFloorProbeArgs(const QsPairFloors *pf, const int *which, int n, Datum *args);
extern void QsFloorFound(QsPairFloors *pf, int p, QsFloorKeyValue key);
extern void QsFloorProbed(QsPairFloors *pf, const int *which, int n);
extern void QsFloorAdvanceAtCommit(const QsPairFloors *pf, int p, QsFloorKeyValue first);
extern bool QsFloorKeyLess(QsFloorKeyValue a, QsFloorKeyValue b);
extern bool QsFloorMisfitSame(const QsPairFloors *pf, const int *pairs, int n,
							  uint64 signature);
extern void QsFloorMisfitNote(const QsPairFloors *pf, const int *pairs, int n,
							  uint64 signature);
extern QsFloorSeen QsFloorRead(QsFloorKind kind, const char *queue, const char *unit);
extern QsFloorKeyValue QsFloorProbe(QsFloorKind kind, const char *queue, const char *unit,
									QsFloorKeyValue from, Snapshot snapshot);
extern QsFloorKeyValue QsFloorStart(QsFloorKind kind, const char *queue, const char *unit,
									const QsFloorSeen *seen, Snapshot snapshot);
extern void QsFloorTouches(const QsPairFloors *pf, const int *which, int n, uint64 *touches,
						   uint64 *wipes);
extern void QsScanFloorXactEvent(XactEvent event);
extern void QsScanFloorSubXactAbort(void);

#endif							/* QS_SCAN_FLOOR_H */

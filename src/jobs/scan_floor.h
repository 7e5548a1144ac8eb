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
#include "utils/snapshot.h"

/*
 * The scans with a floor, each an ordered walk of a partial index:
 * CLAIMABLE, the SCHEDULED jobs no agent holds and none is placed on
 * (job_claimable, by scheduled_at and id; per unit, and over all units,
 * unit ""); UNCLAIMED, the SCHEDULED jobs no agent holds (job_claimable,
 * per queue); LAPSED, the held jobs by lease_until (job_lease, per queue;
 * the second part of its key is 0).
 */
typedef enum QsFloorKind
{
	QS_FLOOR_CLAIMABLE,
	QS_FLOOR_UNCLAIMED,
	QS_FLOOR_LAPSED
} QsFloorKind;

/* A key of a scan: (timestamp, id); PG_INT64_MAX in both: past every row. */
#define QS_FLOOR_TOP(v) ((v).k[0] == PG_INT64_MAX && (v).k[1] == PG_INT64_MAX)
typedef struct QsFloorKeyValue
{
	int64		k[2];
} QsFloorKeyValue;

/* What a reader saw of a floor before its scan's snapshot (QsFloorRead). */
typedef struct QsFloorSeen
{
	bool		valid;			/* false: start from the beginning */
	bool		own;			/* this transaction moved rows into the scan */
	uint64		gen;
	QsFloorKeyValue floor;
} QsFloorSeen;

extern void QsScanFloorRegister(void);
extern QsFloorSeen QsFloorRead(QsFloorKind kind, const char *queue, const char *unit);
extern QsFloorKeyValue QsFloorStart(QsFloorKind kind, const char *queue, const char *unit,
									const QsFloorSeen *seen, Snapshot snapshot);
extern void QsScanFloorXactEvent(XactEvent event);

#endif							/* QS_SCAN_FLOOR_H */

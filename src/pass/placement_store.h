/*-------------------------------------------------------------------------
 *
 * placement_store.h
 *		The pass's writes and reads of placements (placement_store.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_PLACEMENT_STORE_H
#define QS_PLACEMENT_STORE_H

#include "utils/snapshot.h"
#include "utils/timestamp.h"

#include "policy.h"

extern void QsWriteDispatches(const QsOutput *out, TimestampTz now);
extern void QsWriteReservations(const QsOutput *out);
extern void QsWriteHostReasons(const QsOutput *out, TimestampTz now);
extern void QsClearPlacementReasons(const char *queue, const QsInput *in);
extern void QsWriteLostParts(const QsOutput *out, TimestampTz now, TimestampTz lapsed);
extern void QsLoadPartLeases(QsJob *jobs, int njobs, Snapshot snapshot);

#endif							/* QS_PLACEMENT_STORE_H */

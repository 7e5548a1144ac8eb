/*-------------------------------------------------------------------------
 *
 * host_usage.h
 *		The counters of what the hosts hold, per queue, unit and agent
 *		(host_usage.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_HOST_USAGE_H
#define QS_HOST_USAGE_H

#include "access/htup.h"
#include "access/tupdesc.h"

extern void QsHostTallyJob(HeapTuple tuple, TupleDesc desc, const char *queue,
						   const char *unit, bool stopping, int sign, int level);
extern bool QsHostTallyAny(int level);
extern void QsHostTallyWrite(int level);
extern void QsHostTallyForget(int level);
extern void QsHostTallyCheck(void);
extern void QsHostTallyReset(void);

#endif							/* QS_HOST_USAGE_H */

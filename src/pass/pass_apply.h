/*-------------------------------------------------------------------------
 *
 * pass_apply.h
 *		The applier of a pass's decisions (pass_apply.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_PASS_APPLY_H
#define QS_PASS_APPLY_H

#include "datatype/timestamp.h"

#include "pass_load.h"
#include "policy.h"

/* queue_status lists at most this many jobs passed over */
#define QS_PASSED_OVER_MAX 100

extern int64 QsApplyDecisions(QsQueueState *state, const QsOutput *out, TimestampTz started);
extern void QsWritePassedOver(QsQueueState *state, const int64 *passed_over, int n);

#endif							/* QS_PASS_APPLY_H */

/*-------------------------------------------------------------------------
 *
 * pass_load.h
 *		The loader of the state of one queue (pass_load.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_PASS_LOAD_H
#define QS_PASS_LOAD_H

#include "datatype/timestamp.h"

#include "queue_state.h"

extern bool QsLoadQueueState(QsQueueState *state, const char *queue, TimestampTz now,
							 bool lock_rows);
extern void QsFreeQueueState(QsQueueState *state);
extern const char *QsAgentOf(const QsQueueState *state, int64 job_id);

#endif							/* QS_PASS_LOAD_H */

/*-------------------------------------------------------------------------
 *
 * pass.h
 *		The pass of one queue (pass.c), which ties together the loader of
 *		its state (pass_load.h), the policy core and the applier
 *		(pass_apply.h); and the list of the queues.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_PASS_H
#define QS_PASS_H

#include "access/tupdesc.h"
#include "datatype/timestamp.h"
#include "nodes/pg_list.h"
#include "utils/tuplestore.h"

extern List *QsAllQueues(void);
extern int	QsRunQueuePass(const char *queue, bool dry_run, Tuplestorestate *store,
						   TupleDesc desc, TimestampTz *wake_at);

#endif							/* QS_PASS_H */

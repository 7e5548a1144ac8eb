/*-------------------------------------------------------------------------
 *
 * job_end.h
 *		The notification of a job's end on quota_sched_job_end (job_end.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_JOB_END_H
#define QS_JOB_END_H

#include "access/xact.h"
#include "nodes/nodes.h"

extern void QsJobEndRegister(void);
extern void QsJobEndQueue(const char *payload);
extern void QsJobEndXactEvent(XactEvent event);
extern void QsJobEndSubXactEvent(SubXactEvent event);
extern void QsJobEndNoteListen(Node *stmt);

#endif							/* QS_JOB_END_H */

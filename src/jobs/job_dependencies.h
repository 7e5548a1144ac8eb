/*-------------------------------------------------------------------------
 *
 * job_dependencies.h
 *		The counts a job's depends_on keeps (scheduling.md 3.17).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_JOB_DEPENDENCIES_H
#define QS_JOB_DEPENDENCIES_H

/* What a submitted job's dependencies are at its submission. */
typedef struct QsDependencies
{
	int32		waiting;		/* jobs that have not SUCCEEDED */
	int64		failed;			/* one that FAILED; 0: none */
} QsDependencies;

extern QsDependencies QsSubmitDependencies(Datum depends_on, const char *queue);
extern void QsDependencyEnded(int64 id, int64 array_id, bool succeeded);

#endif							/* QS_JOB_DEPENDENCIES_H */

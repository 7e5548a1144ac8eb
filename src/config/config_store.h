/*-------------------------------------------------------------------------
 *
 * config_store.h
 *		The configuration store (config_store.c): the rows of the three
 *		configuration tables (service_environment, job_queue, quota_share)
 *		as typed C rows, decoded by column name from one statement per
 *		table, for every reader of the configuration: the pass's loader
 *		(pass_load.c, and through it explain, queue_snapshot and the
 *		what-if replay) and the submitters' cache (config_cache.c).
 *
 * With a queue's rows comes its queue_status row, which the passes keep.
 * A word column (a strategy, a queueing, a borrow order, a budget period,
 * a state) that holds none of its kind's words is an error, never a
 * default.  A share's options that the policy core obeys are decoded
 * straight into its QsShare (policy.h): a new one is a field there and
 * one line of ShareFields (config_store.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_CONFIG_STORE_H
#define QS_CONFIG_STORE_H

#include "datatype/timestamp.h"
#include "utils/jsonb.h"
#include "utils/snapshot.h"

#include "policy.h"

/* A row of service_environment. */
typedef struct QsEnvironmentConfig
{
	char	   *name;
	Jsonb	   *capacity_limits;
	bool		enabled;		/* state ENABLED */
} QsEnvironmentConfig;

/* A row of job_queue. */
typedef struct QsQueueConfig
{
	char	   *name;
	char	   *service_environment;
	bool		enabled;		/* state ENABLED */
	Interval   *runnable_timeout;	/* NULL: none */
	QsBorrowOrder borrow_order;
	Interval   *claim_timeout;	/* NULL: none */
	Interval   *fair_half_life; /* NULL: none */
	QsTime		fence_grace;	/* microseconds (scheduling.md 3.10) */
} QsQueueConfig;

/*
 * A row of quota_share.  policy is the share as the policy core sees it:
 * name, strategy, borrow_limit, in_share_preemption, enabled (state),
 * lend_limit, strict (queueing), min_runtime and weight; its arrays per
 * unit (capacity, budget, spent) are the loader's, which knows the units.
 */
/*
 * A capacity map decoded (QsDecodeCapacities): its units, the keys in the
 * map's order, and the capacity of each (0: not a number).
 */
typedef struct QsCapacities
{
	int			n;
	char	  **units;
	int64	   *caps;
} QsCapacities;

typedef struct QsShareConfig
{
	QsShare		policy;
	char	   *job_queue;
	Jsonb	   *capacity_limits;
	QsCapacities capacities;	/* capacity_limits decoded (QsReadShareConfigs) */
	char	   *submit_role;	/* NULL: none */
	Jsonb	   *budget;			/* NULL: none (an empty map) */
	QsCapacities budgets;		/* budget decoded (QsReadShareConfigs): per
								 * unit, thousandths of an instance-hour
								 * (QsBudgetThousandths), -1: not a budget */
	QsPeriod	budget_period;
} QsShareConfig;

/* Job ids (an int8[] column). */
typedef struct QsIds
{
	int64	   *ids;
	int			n;
} QsIds;

/*
 * A row of queue_status, which the passes write of a queue (none: no job
 * was ever passed over): read with the queue's configuration, in the same
 * statement, since every pass wants both.
 */
typedef struct QsQueueStatus
{
	QsIds		passed_over;
	int32		passed_over_passes;
} QsQueueStatus;

/* How a read sees the tables: in a snapshot, or as SPI does (QsQueryRun). */
typedef struct QsConfigRead
{
	Snapshot	snapshot;		/* NULL: SPI's */
	bool		read_only;		/* without a snapshot: in the active one */
} QsConfigRead;

extern bool QsReadQueueConfig(const char *queue, QsConfigRead how, QsQueueConfig *config,
							  QsEnvironmentConfig *environment, QsQueueStatus *status);
extern QsCapacities QsDecodeCapacities(Jsonb *map, bool budget);
extern int64 QsCapacityOfUnit(const QsCapacities *capacities, const char *unit);
extern bool QsSameUnits(const QsCapacities *a, const QsCapacities *b);
extern int	QsReadShareConfigs(const char *queue, QsConfigRead how, QsShareConfig **shares);
extern bool QsReadSubmitConfig(const char *queue, const char *share, QsConfigRead how,
							   QsQueueConfig *config, QsEnvironmentConfig *environment,
							   QsShareConfig *share_config, bool *share_found);

#endif							/* QS_CONFIG_STORE_H */

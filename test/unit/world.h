/*-------------------------------------------------------------------------
 *
 * world.h
 *		An in-memory job queue for driving the policy core without
 *		PostgreSQL: the unit tests and the simulator build a World, run
 *		passes on it and apply the decisions the way the shell does.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_WORLD_H
#define QS_WORLD_H

#include "policy.h"

#define W_MAX_UNITS 4
#define W_MAX_SHARES 16
#define W_MAX_JOBS 4096
#define W_MAX_HOSTS 64
#define W_MAX_LABELS 4
#define W_MAX_DEPS 6			/* ids a job's depends_on names */
/* the RUNNABLE jobs a dependency of which FAILED that the shell reads a pass, by id (QS_DUE_JOBS_MAX) */
#define W_DEPENDENCY_FAILED_MAX 1000

typedef enum WState
{
	W_RUNNABLE = QS_RUNNABLE,
	W_SCHEDULED = QS_SCHEDULED,
	W_STARTING = QS_STARTING,
	W_RUNNING = QS_RUNNING,
	W_SUCCEEDED,
	W_FAILED
} WState;

typedef struct WJob
{
	QsJob		j;				/* state kept in j.state when live */
	WState		state;
	const char *name;
	const char *status_reason;
	QsTime		status_reason_at;
	int			nparts;			/* its placement, or its reservation */
	const QsPart *parts;
	int64_t		array_id;		/* 0: of no array; else its index 0's id */
	/*
	 * depends_on (scheduling.md 3.17): job ids, an array's id standing for
	 * every job of the array; j.deps_waiting and j.dependency_failed are
	 * kept from it as the shell keeps them (WSubmitDeps, WEnd, WApply)
	 */
	int			ndeps;
	int64_t		deps[W_MAX_DEPS];
} WJob;

/* A host of a placed unit: a live, ACTIVE, bounded agent. */
typedef struct WHost
{
	const char *name;
	int64_t		instances;
	int			nlabels;
	QsLabel		labels[W_MAX_LABELS];
} WHost;

typedef struct World
{
	QsTime		now;
	bool		env_enabled;
	bool		fair;			/* borrow_order FAIR */
	bool		memory;			/* a fair_half_life: recent_borrow is read */
	double		recent_borrow[W_MAX_SHARES][W_MAX_UNITS];
	int			nunits;
	QsUnit		units[W_MAX_UNITS];	/* placed: the unit has hosts below */
	int			nhosts[W_MAX_UNITS];
	WHost		hosts[W_MAX_UNITS][W_MAX_HOSTS];	/* any order */
	int			nshares;
	QsShare		shares[W_MAX_SHARES];
	int64_t		capacity[W_MAX_SHARES][W_MAX_UNITS];
	double		budget[W_MAX_SHARES][W_MAX_UNITS];	/* instance-hours; -1: none */
	double		spent[W_MAX_SHARES][W_MAX_UNITS];
	int			njobs;
	WJob		jobs[W_MAX_JOBS];
	QsTime		runnable_timeout;	/* QS_NO_TIME: none */
	QsTime		claim_timeout;	/* QS_NO_TIME: none */
	QsTime		fence_grace;	/* 0: none */
	int			dependency_failed_max;	/* the pass reads at most this many RUNNABLE
										 * jobs a dependency of which FAILED, the
										 * first by id (W_DEPENDENCY_FAILED_MAX) */
	/* what the last pass read through the source, by job id */
	int			nread;
	int64_t		read[W_MAX_JOBS];
	QsOutput	out;
} World;

extern void WInit(World *w, int64_t env_limit);
extern int	WAddUnit(World *w, const char *name, int64_t env_limit);
extern int	WAddShare(World *w, const char *name, QsStrategy strategy,
					  int32_t borrow_limit, bool in_share_preemption,
					  int64_t capacity_unit0);
extern WJob *WSubmit(World *w, const char *name, int share, int32_t priority,
					 int32_t count);
extern WJob *WSubmitUnit(World *w, const char *name, int share, int unit,
						 int32_t priority, int32_t count);
extern WJob *WSubmitDeps(World *w, const char *name, int share, int unit,
						 int32_t priority, int32_t count, const int64_t *deps, int ndeps);
extern WJob *WExpandArray(World *w, WJob *job, int size);
extern WJob *WFind(World *w, const char *name);
extern WHost *WAddHost(World *w, int unit, const char *name, int64_t instances);
extern void WLabel(WHost *host, const char *key, const char *value);
extern void WRemoveHost(World *w, int unit, const char *name);
extern int	WPartOn(const WJob *job, const char *host);
extern const QsOutput *WPass(World *w);
extern QsWhy WExplain(World *w, const WJob *job);
extern QsHold WStrictHead(World *w, const WJob *job, QsJob *head);
extern void WApply(World *w);
extern const QsOutput *WPassApply(World *w);
extern void WClaim(World *w, WJob *job, QsTime lease);
extern void WStopped(World *w, WJob *job);
extern void WEnd(World *w, WJob *job, WState state);
extern const QsDecision *WDecisionFor(const QsOutput *out, const WJob *job);
extern bool WWasRead(const World *w, const WJob *job);
extern void WFreeAll(void);

#endif							/* QS_WORLD_H */

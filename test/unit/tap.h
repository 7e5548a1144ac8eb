/*-------------------------------------------------------------------------
 *
 * tap.h
 *		A minimal TAP producer for the core's unit tests, and helpers on the
 *		decisions of a pass.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_TAP_H
#define QS_TAP_H

#include <stdio.h>

#include "world.h"

static int	tests_run;
static int	tests_failed;

#define CHECK(cond, ...) \
	do { \
		tests_run++; \
		if (cond) \
			printf("ok %d - ", tests_run); \
		else \
		{ \
			tests_failed++; \
			printf("not ok %d - ", tests_run); \
		} \
		printf(__VA_ARGS__); \
		printf("\n"); \
		if (!(cond)) \
			printf("#   failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
	} while (0)

static inline bool
Dispatched(const QsOutput *out, const WJob *job)
{
	const QsDecision *d = WDecisionFor(out, job);

	return d != NULL && d->action == QS_DISPATCH;
}

static inline QsAction
ActionFor(const QsOutput *out, const WJob *job)
{
	const QsDecision *d = WDecisionFor(out, job);

	return d == NULL ? (QsAction) -1 : d->action;
}

/* An agent claims every SCHEDULED job and reports it RUNNING. */
static inline void
ClaimAll(World *w)
{
	for (int i = 0; i < w->njobs; i++)
		if (w->jobs[i].state == W_SCHEDULED)
		{
			WClaim(w, &w->jobs[i], 1000000);
			w->jobs[i].state = W_RUNNING;
			w->jobs[i].j.state = QS_RUNNING;
		}
}

/* How many decisions of the pass have this action. */
static inline int
CountAction(const QsOutput *out, QsAction action)
{
	int			n = 0;

	for (int i = 0; i < out->ndecisions; i++)
		n += out->decisions[i].action == action;
	return n;
}

static inline int
TapDone(void)
{
	WFreeAll();
	printf("1..%d\n", tests_run);
	if (tests_failed)
		printf("# %d of %d unit tests failed\n", tests_failed, tests_run);
	return tests_failed ? 1 : 0;
}

#endif							/* QS_TAP_H */

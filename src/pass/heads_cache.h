/*-------------------------------------------------------------------------
 *
 * heads_cache.h
 *		The first RUNNABLE jobs of each share and unit of a queue, kept
 *		between passes while none of them changed (heads_cache.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_HEADS_CACHE_H
#define QS_HEADS_CACHE_H

#include "access/htup.h"

#include "job_store.h"
#include "scan_floor.h"

typedef struct QsHeadsKept QsHeadsKept;

extern QsHeadsKept **QsHeadsEntries(const QsPairFloors *pf, const int *which, int n);
extern int	QsHeadsRank(const QsHeadsKept *e);
extern bool QsHeadsTake(const QsHeadsKept *e, uint64 touches, uint64 wipes, int limit,
						const QsJobRow **rows, int *n);
extern const QsJobRow *QsHeadsKeep(QsHeadsKept *e, uint64 touches, uint64 wipes, int limit,
								   HeapTuple *tuples, int n, const QsJobDecoder *decoder);
extern void QsHeadsNoteRead(int n);

#endif							/* QS_HEADS_CACHE_H */

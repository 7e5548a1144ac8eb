/*-------------------------------------------------------------------------
 *
 * borrow_memory.h
 *		recent_borrow(S,u) of a queue with a fair_half_life, kept by the
 *		passes (borrow_memory.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_BORROW_MEMORY_H
#define QS_BORROW_MEMORY_H

#include "queue_state.h"

extern void QsLoadBorrowMemory(QsQueueState *state);
extern void QsWriteBorrowMemory(QsQueueState *state);

#endif							/* QS_BORROW_MEMORY_H */

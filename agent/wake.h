/*-------------------------------------------------------------------------
 *
 * wake.h
 *		How quota-sched-agent learns of its work between statements:
 *		agent_wait, else LISTEN (wake.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_AGENT_WAKE_H
#define QS_AGENT_WAKE_H

#include <stdbool.h>

#include <libpq-fe.h>

extern bool wake_setup(PGconn *conn);
extern const char *wake_mode(void);
extern bool wake_waits(void);
extern bool wake_start(PGconn *conn, int timeout_ms, int limit_ms);
extern bool wake_input(PGconn *conn);
extern bool wake_end(PGconn *conn);
extern void wake_lost(PGconn *conn);

#endif							/* QS_AGENT_WAKE_H */

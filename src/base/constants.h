/*-------------------------------------------------------------------------
 *
 * constants.h
 *		The constants shared by the PostgreSQL shell of quota_sched.
 *
 * The policy core (policy.h) knows nothing of these: they belong to the
 * shell that loads snapshots, applies decisions and guards the tables.
 * What each file of the shell offers the others is in its own header.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_CONSTANTS_H
#define QS_CONSTANTS_H

#define QS_SCHEMA "quota_sched"

/* The extension version whose schema this library works with. */
#define QS_LIBRARY_VERSION QS_VERSION_STRING	/* the Makefile's, from quota_sched.control */

/*
 * The longest name of an environment, queue, share, job, capacity unit or
 * agent, in bytes (checks.c).
 */
#define QS_MAX_NAME_LEN 128

/* Longest payload, as text (scheduling.md 2). */
#define QS_MAX_PAYLOAD_BYTES (1024 * 1024)
/* the largest tags of a job as text, and reason of a report or terminate */
#define QS_MAX_TAGS_BYTES (64 * 1024)
#define QS_MAX_REASON_BYTES 1024

#endif							/* QS_CONSTANTS_H */

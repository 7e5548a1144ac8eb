/*-------------------------------------------------------------------------
 *
 * agent_api.h
 *		The setting of the launcher agents' functions (agent_api.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef AGENT_API_H
#define AGENT_API_H

extern int	QsStopTimeoutSeconds;

extern void QsDefineAgentSettings(void);

#endif							/* AGENT_API_H */

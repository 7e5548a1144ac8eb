/*-------------------------------------------------------------------------
 *
 * rendezvous.c
 *		quota-sched-agent's side of a multi-host job's rendezvous
 *		(doc/agents.md "Running a multi-host job"): a part it claimed of a
 *		job placed on several hosts waits, its command not started, until
 *		every part of the attempt is claimed and rank 0's rendezvous port
 *		is known (job_peers); the agent holding rank 0 chooses the port (a
 *		free TCP port of its host) and gives it with attempt_started.  Then
 *		the part's command starts with the variables of its place
 *		(set_rendezvous_env).
 *
 * A part that waits is asked about every PEERS_POLL_SECONDS, and at once
 * on a notification of quota_sched_peers (a part claimed, a port given):
 * the notification is only a wake-up, so the agent works without one
 * (--no-listen).  Its lease is renewed by the heartbeats as usual; a stop
 * (a peer that failed, a part not claimed in time, a preemption) ends it
 * without running it, reported STOPPED; a lease that ran out, or a job
 * that the heartbeat no longer gives it, is dropped; the agent shutting
 * down releases it.  What job_peers refuses is left to the heartbeat.  A job of one part (not placed on hosts, or on one) waits
 * for nothing: it is rank 0, its address is the agent's, and its port is
 * chosen as it starts.
 *
 *-------------------------------------------------------------------------
 */
#include "db.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* how often a part that waits asks job_peers (seconds) */
#define PEERS_POLL_SECONDS 0.5

bool		want_peers = false; /* a notification came: ask at once */

/* own_address: where the other hosts reach this one: --address, else its name */
static const char *
own_address(void)
{
	return opts.address ? opts.address : opts.host;
}

/*
 * free_port chooses a TCP port free on every address of this host (bound
 * to port 0 of the wildcard address, read, closed: the rendezvous of
 * PyTorch and DeepSpeed listens on every address); 0 if none could be
 * had.  Another process may take it before the job binds it: a rare race
 * that fails the attempt.
 */
static int
free_port(void)
{
	struct sockaddr_in6 in6 = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_ANY_INIT};
	struct sockaddr_in in4 = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
	bool		v6 = opts.address != NULL && strchr(opts.address, ':') != NULL;
	struct sockaddr *sa = v6 ? (struct sockaddr *) &in6 : (struct sockaddr *) &in4;
	socklen_t	len = v6 ? sizeof(in6) : sizeof(in4);
	int			fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int			port = 0;

	if (fd < 0)
		return 0;
	if (bind(fd, sa, len) == 0 && getsockname(fd, sa, &len) == 0)
		port = ntohs(v6 ? in6.sin6_port : in4.sin_port);
	close(fd);
	return port;
}

/* copy: a malloc'd copy of s (NULL: NULL) */
static char *
copy(const char *s)
{
	char	   *c = s ? strdup(s) : NULL;

	if (s && c == NULL)
		fatal("out of memory");
	return c;
}

/* free_rendezvous: what the job's rendezvous holds (the claim kept, the hosts) */
void
free_rendezvous(Job *job)
{
	Rendezvous *r = &job->rdv;

	free(r->command_error);
	free(r->argv_text);
	free(r->payload);
	free(r->hosts);
	r->command_error = r->argv_text = r->payload = r->hosts = NULL;
}

/*
 * begin_rendezvous takes a job just claimed: a job of one part (its part
 * is the whole job), or one whose command cannot run, starts at once;
 * a part of a job on several hosts waits for its peers (do_rendezvous),
 * its output file opened to say so.
 */
void
begin_rendezvous(Job *job, const ClaimedJob *claimed)
{
	Rendezvous *r = &job->rdv;

	snprintf(r->address, sizeof(r->address), "%s", own_address());
	if (job->instances >= job->job_instances || claimed->command_error)
	{
		r->known = true;
		r->nhosts = 1;
		r->rank = 0;
		r->hosts = copy(r->address);
		snprintf(r->master, sizeof(r->master), "%s", r->address);
		r->port = claimed->command_error ? 0 : free_port();
		job->ops->start(job, claimed);
		return;
	}
	r->waiting = true;
	r->command_error = NULL;
	r->argv_text = copy(claimed->argv_text);
	r->payload = copy(claimed->payload);
	r->waited_from = now_mono();
	r->ask_at = 0;
	want_peers = true;
	open_attempt_log(job);
	attempt_note(job, "a part of %d instance(s) of a job of %d: waiting for its peers",
				 job->instances, job->job_instances);
	log_event("info", "job_waiting", job,
			  "a part of %d instance(s) of a job of %d: waiting for its peers",
			  job->instances, job->job_instances);
}

/*
 * end_wait ends a part that waits without running it: action ACT_REPORT
 * reports it STOPPED (a stop was asked), ACT_RELEASE releases it (the
 * agent shuts down), ACT_DROP forgets it (no longer this agent's).
 */
void
end_wait(Job *job, Action action, const char *why)
{
	job->rdv.waiting = false;
	free_rendezvous(job);
	attempt_note(job, "not started: %s", why);
	log_event("info", "job_not_started", job, "it waited for its peers: %s", why);
	close_attempt_log(job);
	if (action == ACT_REPORT)
		set_report(job, "STOPPED", 0, false, NULL);
	else if (action == ACT_RELEASE)
		snprintf(job->reason, sizeof(job->reason), "agent %s shut down", opts.agent);
	job->action = action;
}

/*
 * give_port: the agent holds rank 0 and every part is claimed: it
 * chooses the port and gives it (attempt_started).  The port, or 0 if it
 * could not be given (asked again at the next poll: a port given whose
 * answer was lost is then in job_peers' answer).
 */
static int
give_port(Job *job)
{
	char		port_text[16];
	char		host[sizeof(opts.host)];
	/* the devices (the last) come with the part's start: tell_attempt */
	const char *params[8] = {job->id_text, opts.agent, job->attempt_text, NULL, NULL, NULL,
	port_text, NULL};
	int			port = free_port();
	PGresult   *res;

	if (port == 0)
	{
		log_event("warning", "no_free_port", job, "no free TCP port for the rendezvous");
		return 0;
	}
	printable_copy(opts.host, host, sizeof(host));
	params[3] = host[0] ? host : NULL;
	snprintf(port_text, sizeof(port_text), "%d", port);
	if (db_exec(STMT_ATTEMPT, params, &res, job) != DB_OK)
		return 0;
	PQclear(res);
	return port;
}

/*
 * start_part: the part's peers are known (r's fields): its command
 * starts with the claim kept, and its output says where it stands.
 */
static void
start_part(Job *job)
{
	Rendezvous *r = &job->rdv;
	ClaimedJob	claimed = {.command_error = r->command_error, .argv_text = r->argv_text,
	.payload = r->payload};

	r->waiting = false;
	r->known = true;
	attempt_note(job, "every part claimed after %.1f s: rank %d of %d, rendezvous at %s:%d",
				 now_mono() - r->waited_from, r->rank, r->nhosts, r->master, r->port);
	log_event("info", "job_rendezvous", job, "rank %d of %d (hosts %s), rendezvous at %s:%d",
			  r->rank, r->nhosts, r->hosts, r->master, r->port);
	job->ops->start(job, &claimed);
	free(r->argv_text);
	free(r->payload);
	r->argv_text = r->payload = NULL;
}

/*
 * join_hosts: the addresses of job_peers' answer (column 2) in rank
 * order, comma-separated, malloc'd.
 */
static char *
join_hosts(PGresult *res)
{
	size_t		len = 1;
	char	   *hosts;
	int			i;

	for (i = 0; i < PQntuples(res); i++)
		len += strlen(PQgetvalue(res, i, 2)) + 1;
	hosts = calloc(1, len);
	if (hosts == NULL)
		fatal("out of memory");
	for (i = 0; i < PQntuples(res); i++)
	{
		if (i > 0)
			strcat(hosts, ",");
		strcat(hosts, PQgetvalue(res, i, 2));
	}
	return hosts;
}

/*
 * ask_heartbeat: job_peers says the part is not of the job's placement
 * now (it went back, NOT_CLAIMED, or was stopped): the heartbeat says
 * what becomes of it (a stop to report, or a job no longer the agent's,
 * forgotten), at once; job_peers is asked again after a heartbeat's
 * interval only.
 */
static void
ask_heartbeat(Job *job)
{
	want_heartbeat = true;
	job->rdv.ask_at = now_mono() + opts.heartbeat;
}

/*
 * take_peers reads job_peers' answer (rank, peer_agent, address,
 * instances, claimed, port, attempt; in rank order): once every part is
 * claimed and rank 0's port is known (given here by rank 0's agent), the
 * part starts.  A placement without this agent's part, or of another
 * attempt, is left to the heartbeat (ask_heartbeat).
 */
static void
take_peers(Job *job, PGresult *res)
{
	Rendezvous *r = &job->rdv;
	int			n = PQntuples(res);
	int			rank = -1;
	int			mine = 0;
	bool		all_claimed = true;
	int			port = n > 0 && !PQgetisnull(res, 0, 5) ? atoi(PQgetvalue(res, 0, 5)) : 0;

	for (int i = 0; i < n; i++)
	{
		if (strcmp(PQgetvalue(res, i, 1), opts.agent) == 0)
		{
			rank = atoi(PQgetvalue(res, i, 0));
			mine = i;
		}
		all_claimed &= strcmp(PQgetvalue(res, i, 4), "t") == 0;
	}
	if (rank < 0 || atoi(PQgetvalue(res, 0, 6)) != job->attempt)
	{
		ask_heartbeat(job);
		return;
	}
	if (!all_claimed)
		return;
	if (port == 0 && rank == 0)
		port = give_port(job);
	if (port == 0)
		return;
	r->nhosts = n;
	r->rank = rank;
	r->port = port;
	r->hosts = join_hosts(res);
	snprintf(r->master, sizeof(r->master), "%s", PQgetvalue(res, 0, 2));
	snprintf(r->address, sizeof(r->address), "%s", PQgetvalue(res, mine, 2));
	start_part(job);
}

/*
 * ask_peers asks job_peers about a part that waits.  A refusal (no such
 * job, not placed on this agent now) is left to the heartbeat
 * (ask_heartbeat); another error is tried again at the next poll.
 */
static void
ask_peers(Job *job)
{
	const char *params[2] = {job->id_text, opts.agent};
	PGresult   *res;
	int			rc;

	job->rdv.ask_at = now_mono() + PEERS_POLL_SECONDS;
	rc = db_exec(STMT_PEERS, params, &res, job);
	if (rc == DB_OK)
	{
		if (PQntuples(res) > 0)
			take_peers(job, res);
		PQclear(res);
	}
	else if (rc == DB_ERROR && (strcmp(last_sqlstate, "P0002") == 0 ||
								strcmp(last_sqlstate, "42501") == 0))
		ask_heartbeat(job);
}

/*
 * do_rendezvous goes through the parts that wait: the agent shutting
 * down releases them, one whose lease surely ran out is dropped, and the
 * others ask job_peers when due (at once after a notification).
 */
void
do_rendezvous(void)
{
	bool		now_all = want_peers;

	want_peers = false;
	for (int i = 0; i < njobs; i++)
	{
		Job		   *job = jobs[i];

		if (!job->rdv.waiting || job->action != ACT_NONE)
			continue;
		if (shutting_down)
			end_wait(job, ACT_RELEASE, "the agent shuts down");
		else if (now_mono() >= job->lease_deadline)
			end_wait(job, ACT_DROP, "its lease ran out without a heartbeat");
		else if (conn != NULL && (now_all || now_mono() >= job->rdv.ask_at))
			ask_peers(job);
	}
}

/*
 * rendezvous_wake: when the part that waits is next to be asked about
 * (not while the database cannot be reached: then when its lease runs out)
 */
double
rendezvous_wake(const Job *job)
{
	if (!job->rdv.waiting || job->action != ACT_NONE)
		return 1e300;
	if (conn == NULL || job->rdv.ask_at > job->lease_deadline)
		return job->lease_deadline;
	return job->rdv.ask_at;
}

/* put_env: setenv of a number */
static void
put_env(const char *name, int value)
{
	char		num[16];

	snprintf(num, sizeof(num), "%d", value);
	setenv(name, num, 1);
}

/*
 * sm_hosts: the hosts as SageMaker's SM_HOSTS has them, a JSON array of
 * strings (malloc'd; an address has no whitespace or control character,
 * but may have a quote or a backslash).
 */
static char *
sm_hosts(const char *hosts)
{
	char	   *out = malloc(3 * strlen(hosts) + 8);
	char	   *o = out;

	if (out == NULL)
		return NULL;
	*o++ = '[';
	*o++ = '"';
	for (const char *h = hosts; *h; h++)
	{
		if (*h == ',')
		{
			memcpy(o, "\",\"", 3);
			o += 3;
			continue;
		}
		if (*h == '"' || *h == '\\')
			*o++ = '\\';
		*o++ = *h;
	}
	memcpy(o, "\"]", 3);
	return out;
}

/*
 * set_rendezvous_env: in a child about to run the job's command (or the
 * external launcher's), the variables of its place (doc/agents.md):
 * quota_sched's own, those of torch.distributed's env:// (for one
 * process per host: WORLD_SIZE the hosts, RANK the host's), torchrun's
 * PET_*, and SageMaker's.
 */
void
set_rendezvous_env(const Job *job)
{
	const Rendezvous *r = &job->rdv;
	char	   *sm;

	if (!r->known)
		return;
	put_env("QUOTA_SCHED_NUM_HOSTS", r->nhosts);
	put_env("QUOTA_SCHED_HOST_RANK", r->rank);
	setenv("QUOTA_SCHED_HOSTS", r->hosts ? r->hosts : r->address, 1);
	put_env("QUOTA_SCHED_INSTANCES_ON_HOST", job->instances);
	setenv("MASTER_ADDR", r->master, 1);
	setenv("PET_MASTER_ADDR", r->master, 1);
	if (r->port > 0)
	{
		put_env("MASTER_PORT", r->port);
		put_env("PET_MASTER_PORT", r->port);
	}
	put_env("NNODES", r->nhosts);
	put_env("NODE_RANK", r->rank);
	put_env("WORLD_SIZE", r->nhosts);
	put_env("RANK", r->rank);
	put_env("PET_NNODES", r->nhosts);
	put_env("PET_NODE_RANK", r->rank);
	put_env("PET_NPROC_PER_NODE", job->instances);
	if ((sm = sm_hosts(r->hosts ? r->hosts : r->address)) != NULL)
		setenv("SM_HOSTS", sm, 1);
	free(sm);
	setenv("SM_CURRENT_HOST", r->address, 1);
	put_env("SM_NUM_GPUS", job->instances);
}

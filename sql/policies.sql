/*
 * policies.sql
 *		Row-level security: who sees and changes which jobs and history
 *		(scheduling.md 8).
 *
 * Run by the install script only, after the functions the policies call
 * (team_shares(), user_api.sql); an update changes a policy in its own
 * script (ALTER POLICY) and this file to match.
 *
 * Admins see and change every job, agents see every job.  A user sees,
 * reprioritises (and explains and terminates, src/user_api.c) their own
 * jobs and those of the shares of their teams (a share's submit_role; a
 * share without one keeps each user to their own jobs, and an owner keeps
 * their own jobs after leaving the team), as the members of a Slurm account
 * or a Kueue namespace do.  A user sees the history of the jobs they see:
 * job_event_user reads the job through job's own policies (they apply
 * inside a policy's subquery too), so the two rules cannot drift apart; it
 * is an EXISTS, so that the history of one job reads one job by its key.
 */

ALTER TABLE quota_sched.job ENABLE ROW LEVEL SECURITY;
CREATE POLICY job_admin ON quota_sched.job TO quota_sched_admin
	USING (true) WITH CHECK (true);
CREATE POLICY job_agent_read ON quota_sched.job FOR SELECT TO quota_sched_agent
	USING (true);
CREATE POLICY job_user_read ON quota_sched.job FOR SELECT TO quota_sched_user
	USING (owner = current_user
		   OR (job_queue, quota_share) IN (SELECT t.job_queue, t.quota_share
											 FROM quota_sched.team_shares() t));
CREATE POLICY job_user_submit ON quota_sched.job FOR INSERT TO quota_sched_user
	WITH CHECK (owner = current_user);
CREATE POLICY job_user_reprioritise ON quota_sched.job FOR UPDATE TO quota_sched_user
	USING (owner = current_user
		   OR (job_queue, quota_share) IN (SELECT t.job_queue, t.quota_share
											 FROM quota_sched.team_shares() t))
	WITH CHECK (owner = current_user
				OR (job_queue, quota_share) IN (SELECT t.job_queue, t.quota_share
												  FROM quota_sched.team_shares() t));

ALTER TABLE quota_sched.job_event ENABLE ROW LEVEL SECURITY;
CREATE POLICY job_event_admin_agent ON quota_sched.job_event FOR SELECT
	TO quota_sched_admin, quota_sched_agent USING (true);
CREATE POLICY job_event_user ON quota_sched.job_event FOR SELECT TO quota_sched_user
	USING (EXISTS (SELECT 1 FROM quota_sched.job j WHERE j.id = job_event.job_id));

/*
 * job_attempt (issue 21, a job's own output): admins see every row; a user
 * sees the attempts of the jobs they see, through job's own policies (as
 * job_event_user).  Agents have no privilege on the table.
 */
ALTER TABLE quota_sched.job_attempt ENABLE ROW LEVEL SECURITY;
CREATE POLICY job_attempt_admin ON quota_sched.job_attempt FOR SELECT TO quota_sched_admin
	USING (true);
CREATE POLICY job_attempt_user ON quota_sched.job_attempt FOR SELECT TO quota_sched_user
	USING (EXISTS (SELECT 1 FROM quota_sched.job j WHERE j.id = job_attempt.job_id));

/*
 * job_part (scheduling.md 3.14): admins see every part; a user the parts
 * of the jobs they see, through job's own policies; an agent login the
 * parts it claimed.
 */
ALTER TABLE quota_sched.job_part ENABLE ROW LEVEL SECURITY;
CREATE POLICY job_part_admin ON quota_sched.job_part FOR SELECT TO quota_sched_admin
	USING (true);
CREATE POLICY job_part_user ON quota_sched.job_part FOR SELECT TO quota_sched_user
	USING (EXISTS (SELECT 1 FROM quota_sched.job j WHERE j.id = job_part.job_id));
CREATE POLICY job_part_agent ON quota_sched.job_part FOR SELECT TO quota_sched_agent
	USING (agent_role = CURRENT_USER);

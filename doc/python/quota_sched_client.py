# quota_sched_client.py: submit jobs to quota_sched from Python and wait
# for them, with psycopg 3 (Debian's python3-psycopg).  doc/python.md
# explains it; test/t/031_python_recipe.pl runs it.
import json
import select
import time

import psycopg
from psycopg import sql
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

ENDED = ("SUCCEEDED", "FAILED")


def connect(conninfo=""):
    """A connection as libpq makes one (PG* variables, a service file, or
    CONNINFO), in autocommit: each statement commits on its own."""
    return psycopg.connect(conninfo, autocommit=True)


def submit(conn, *, client_token, name, job_queue, quota_share, capacity_unit,
           command, **columns):
    """Submit a job (or an array of jobs: array_size=N) and return its id,
    the same id when the same client_token was submitted before (a retry
    after a lost answer submits nothing).  COLUMNS: any other column a
    submitter sets (instance_count, priority, timeout, depends_on, ...)."""
    values = dict(client_token=client_token, name=name, job_queue=job_queue,
                  quota_share=quota_share, capacity_unit=capacity_unit,
                  payload=Jsonb({"command": command}), **columns)
    insert = sql.SQL(
        "INSERT INTO quota_sched.job ({}) VALUES ({})"
        " ON CONFLICT (client_token) DO NOTHING RETURNING id").format(
            sql.SQL(", ").join(map(sql.Identifier, values)),
            sql.SQL(", ").join(sql.Placeholder() * len(values)))
    row = conn.execute(insert, list(values.values())).fetchone()
    if row is None:
        # the token is taken: by our earlier submission, whose id we read
        row = conn.execute("SELECT id FROM quota_sched.job WHERE client_token = %s",
                           [client_token]).fetchone()
        if row is None:
            raise LookupError(f"client_token {client_token!r} is taken by a job"
                              " you may not see: choose another")
    return row[0]


def array_jobs(conn, array_id):
    """The jobs of an array, as (job_id, array_index) pairs in index order."""
    return conn.execute("SELECT id, array_index FROM quota_sched.job"
                        " WHERE array_id = %s ORDER BY array_index", [array_id]).fetchall()


def wait(conn, job_ids, timeout=None):
    """Wait until every job of JOB_IDS has ended; return {job_id: state}.
    Listen first, then read the states, then wait for notifications: a job
    that ends in between is seen by one or the other.  A notification only
    wakes us up (any login may NOTIFY): the states come from the table."""
    waiting, ended, heard = set(job_ids), {}, []
    deadline = None if timeout is None else time.monotonic() + timeout
    conn.add_notify_handler(heard.append)  # those psycopg reads during a query
    try:
        conn.execute("LISTEN quota_sched_job_end")
        while True:
            states = dict(conn.execute("SELECT id, state FROM quota_sched.job"
                                       " WHERE id = ANY(%s)", [list(waiting)]).fetchall())
            if waiting - states.keys():
                raise LookupError(f"no jobs {sorted(waiting - states.keys())} that you may see")
            ended.update((i, s) for i, s in states.items() if s in ENDED)
            waiting -= ended.keys()
            if not waiting:
                return ended
            while not any(_job_of(n) in waiting for n in heard):
                heard.clear()
                _receive(conn, heard, deadline, waiting)
            heard.clear()
    finally:
        conn.remove_notify_handler(heard.append)
        if not conn.closed:
            conn.execute("UNLISTEN quota_sched_job_end")


def _job_of(notification):
    """The job a notification of quota_sched_job_end names, else None."""
    try:
        if notification.channel == "quota_sched_job_end":
            return json.loads(notification.payload)["job_id"]
    except (ValueError, KeyError, TypeError):
        pass
    return None


def _receive(conn, heard, deadline, waiting):
    """Add to HEARD the notifications the server sent, waiting for one until
    DEADLINE.  psycopg 3.1 (Debian 12's) has no notifies(timeout=): this is
    libpq's way, PQnotifies, then select() on the socket and PQconsumeInput.
    PQnotifies comes first: the end of the last query may have read some."""
    while True:
        while (n := conn.pgconn.notifies()) is not None:
            enc = conn.info.encoding
            heard.append(psycopg.Notify(n.relname.decode(enc), n.extra.decode(enc), n.be_pid))
        if heard:
            return
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        if not select.select([conn.fileno()], [], [], left)[0]:
            raise TimeoutError(f"jobs {sorted(waiting)} have not ended")
        conn.pgconn.consume_input()


def attempts(conn, job_id):
    """What each attempt (and part) of a job said: host, log file, exit
    code and the last 4096 bytes of its output."""
    return conn.cursor(row_factory=dict_row).execute(
        "SELECT attempt, rank, agent, host, log_path, exit_code, output, started_at, ended_at"
        " FROM quota_sched.job_attempts WHERE job_id = %s ORDER BY attempt, rank",
        [job_id]).fetchall()


def explain(conn, job_id):
    """Why a job waits, as a dict: blocked_by (a code, None when nothing
    keeps it from starting), detail (a sentence), and the code's figures."""
    return conn.execute("SELECT quota_sched.explain(%s)", [job_id]).fetchone()[0]


# The refusals a submitter meets, by SQLSTATE (psycopg's exception classes
# are named after them: e.sqlstate, or except psycopg.errors.CheckViolation).
REFUSALS = {
    "23503": "it names what does not exist, or what you may not see:"
             " a queue, a share, a job of depends_on",
    "23514": "a value the rules refuse, which the message names",
    "42501": "not yours to do: another team's share, or a column the system sets",
}


def refusal(err):
    """One line about a psycopg error: its SQLSTATE, what that means, and
    the server's message, with its detail and hint when it has them."""
    d = err.diag
    said = d.message_primary or str(err)
    said += "".join(f" {k}: {v}" for k, v in (("DETAIL", d.message_detail),
                                               ("HINT", d.message_hint)) if v)
    return f"{err.sqlstate} ({REFUSALS.get(err.sqlstate, 'an error')}): {said}"

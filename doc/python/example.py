# example.py: the recipe of doc/python.md from end to end, with
# quota_sched_client.py: a training job submitted (and submitted again:
# the same id), waited for, its output read; a sweep (an array), an eval
# that depends on it and why the eval waits; three refusals told apart.
#   python3 example.py --queue ml-queue --share nlp --unit gpu --run r1
# It connects as libpq does: PGHOST, PGDATABASE, PGUSER, ... or --dsn.
import argparse

import psycopg

import quota_sched_client as qs

TRAIN = """
import sys, time
for epoch in range(1, 4):
    time.sleep(float(sys.argv[1]) / 3)  # the training
    print(f"epoch {epoch}: loss {1 / (1 + epoch):.3f}")
print("saved model.pt")
"""

# each job of the array reads its index, and picks its learning rate by it
SWEEP = """
import os, sys, time
index = int(os.environ["QUOTA_SCHED_ARRAY_INDEX"])
rate = [0.1, 0.03, 0.01, 0.003, 0.001][index % 5]
time.sleep(float(sys.argv[1]))  # the training
print(f"index {index}: learning rate {rate}: loss {rate * 3:.4f}")
"""

EVAL = 'print("eval: every job of the sweep has ended")'


def show_attempts(conn, label, job_id):
    for a in qs.attempts(conn, job_id):
        print(f"{label}: job {job_id} attempt {a['attempt']} rank {a['rank']} on {a['host']},"
              f" exit code {a['exit_code']}, log {a['log_path']}")
        for line in (a["output"] or "").splitlines():
            print(f"{label}:   | {line}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dsn", default="", help="a connection string (default: libpq's)")
    p.add_argument("--queue", required=True)
    p.add_argument("--share", required=True)
    p.add_argument("--unit", required=True, help="the capacity unit, e.g. gpu")
    p.add_argument("--run", required=True, help="names the jobs and their tokens")
    p.add_argument("--python", default="python3", help="the Python of the hosts")
    p.add_argument("--sweep", type=int, default=4, help="the array's size")
    p.add_argument("--train-seconds", type=float, default=5)
    p.add_argument("--other-share", help="another team's share, to be refused")
    p.add_argument("--timeout", type=float, default=600)
    args = p.parse_args()
    conn = qs.connect(args.dsn)
    job = dict(job_queue=args.queue, quota_share=args.share, capacity_unit=args.unit)
    token = f"{args.share}:{args.run}"

    # 1. submit, and again with the same token: the same job
    train_job = dict(job, client_token=f"{token}:train", name=f"{args.run}-train",
                     command=[args.python, "-c", TRAIN, str(args.train_seconds)])
    train = qs.submit(conn, **train_job)
    again = qs.submit(conn, **train_job)  # a retry: the same token, the same job
    print(f"train: submitted job {train}; submitted again: job {again}")

    # 2. wait for its end, 3. read its output
    print(f"train: job {train} ended {qs.wait(conn, [train], args.timeout)[train]}")
    show_attempts(conn, "train", train)

    # 4. an array, and an eval that runs once every job of it SUCCEEDED
    sweep = qs.submit(conn, client_token=f"{token}:sweep", name=f"{args.run}-sweep",
                      command=[args.python, "-c", SWEEP, str(args.train_seconds)],
                      array_size=args.sweep, **job)
    jobs = qs.array_jobs(conn, sweep)
    print(f"sweep: submitted array {sweep}: " + " ".join(f"{i}[{x}]" for i, x in jobs))
    evaluation = qs.submit(conn, client_token=f"{token}:eval", name=f"{args.run}-eval",
                           command=[args.python, "-c", EVAL], depends_on=[sweep], **job)
    print(f"eval: submitted job {evaluation}, depending on array {sweep}")

    # 5. why the eval waits
    why = qs.explain(conn, evaluation)
    print(f"eval: blocked by {why['blocked_by']}, waiting for {why.get('waiting_for')}:"
          f" {why['detail']}")

    ended = qs.wait(conn, [i for i, _ in jobs] + [evaluation], args.timeout)
    for i, x in jobs:
        print(f"sweep: job {i} (index {x}) ended {ended[i]}")
        show_attempts(conn, "sweep", i)
    print(f"eval: job {evaluation} ended {ended[evaluation]}")
    show_attempts(conn, "eval", evaluation)

    # 6. refusals, told apart by their SQLSTATE (23503, 23514, 42501)
    tries = [("no-such-share", ["true"]), (args.share, "python3 train.py")]
    if args.other_share:
        tries.append((args.other_share, ["true"]))
    for n, (share, command) in enumerate(tries):
        try:
            qs.submit(conn, client_token=f"{token}:bad{n}", name=f"{args.run}-bad",
                      job_queue=args.queue, quota_share=share, capacity_unit=args.unit,
                      command=command)
        except psycopg.Error as e:
            print(f"refused: {qs.refusal(e)}")


if __name__ == "__main__":
    main()

"""A small PyTorch DDP training run, one process per host (gloo, CPU), for
test/t/025_multihost_ddp.pl and doc/agents.md "Running a multi-host job".

It initialises torch.distributed with init_method env:// from the variables
quota-sched-agent gives each part of a job (MASTER_ADDR, MASTER_PORT,
WORLD_SIZE, RANK), trains a tiny model for STEPS steps on data drawn from a
seed per step (so that a run resumed from a checkpoint ends as an
uninterrupted one would), writes a checkpoint after each step to
QUOTA_SCHED_CHECKPOINT_DIR (rank 0, atomically) and resumes from it when one
is there.  Each rank prints the step it resumed from and, at the end, a
digest of its final weights: the ranks of a run end with the same digest.

Usage: train.py STEPS [SECONDS_PER_STEP]
"""
import hashlib
import os
import sys
import time

import torch
import torch.distributed as dist

VARIABLES = ("QUOTA_SCHED_NUM_HOSTS", "QUOTA_SCHED_HOST_RANK", "QUOTA_SCHED_HOSTS",
             "QUOTA_SCHED_INSTANCES_ON_HOST", "MASTER_ADDR", "MASTER_PORT", "NNODES",
             "NODE_RANK", "WORLD_SIZE", "RANK", "PET_NNODES", "PET_NODE_RANK",
             "PET_MASTER_ADDR", "PET_MASTER_PORT", "PET_NPROC_PER_NODE", "SM_HOSTS",
             "SM_CURRENT_HOST", "SM_NUM_GPUS")


def say(rank, text):
    print(f"rank {rank}: {text}", flush=True)


def digest(model):
    """sha256 of the weights rounded to 6 decimals, its first 16 hex digits"""
    h = hashlib.sha256()
    for p in model.parameters():
        for v in p.detach().flatten().tolist():
            h.update(f"{v:.6f};".encode())
    return h.hexdigest()[:16]


def batch(step):
    g = torch.Generator().manual_seed(1000 + step)
    x = torch.randn(16, 4, generator=g)
    y = x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]]) + 0.1
    return x, y


def main():
    steps = int(sys.argv[1])
    pause = float(sys.argv[2]) if len(sys.argv) > 2 else 0.0
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    ckpt_dir = os.environ["QUOTA_SCHED_CHECKPOINT_DIR"]
    ckpt = os.path.join(ckpt_dir, "ddp.pt")
    say(rank, " ".join(f"{v}={os.environ.get(v, '')}" for v in VARIABLES))
    dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=world)
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    start = 0
    if os.path.exists(ckpt):
        state = torch.load(ckpt)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        start = state["step"]
    say(rank, f"resumed from step {start}" if start else "started from step 0")
    for step in range(start, steps):
        x, y = batch(step)
        # each rank its half of the batch; DDP averages the gradients
        half = x.shape[0] // world
        xs, ys = x[rank * half:(rank + 1) * half], y[rank * half:(rank + 1) * half]
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(ddp(xs), ys)
        loss.backward()
        opt.step()
        if rank == 0:
            tmp = ckpt + ".tmp"
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(),
                        "step": step + 1}, tmp)
            os.replace(tmp, ckpt)
            with open(os.path.join(ckpt_dir, "step"), "w") as f:
                f.write(f"{step + 1}\n")
        say(rank, f"step {step + 1} loss {loss.item():.4f}")
        time.sleep(pause)
    dist.barrier()
    say(rank, f"done after step {steps}, weights {digest(model)}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

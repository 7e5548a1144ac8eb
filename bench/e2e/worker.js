// bench/e2e/worker.js: the graphile-worker side of the end-to-end benchmark.
//
//   node worker.js --migrate            install graphile-worker's schema, exit
//   node worker.js [--pickup-log FILE]  run a worker pool with a no-op task
//
// The pool runs graphile-worker's defaults but for concurrency (E2E_CONCURRENCY,
// default 4) and a quiet logger (warnings and errors only; logging every
// completed job would cost the worker CPU that quota_sched's agents do not
// spend).  It connects with DATABASE_URL.  It prints "ready" once it runs and,
// on SIGTERM or SIGINT, stops gracefully, prints how many tasks it ran and
// its CPU time, and with --pickup-log writes "job_id pickup_us" for every
// task run: the wall clock (microseconds since the epoch) when the no-op task
// was called, i.e. when the worker had got the job from the database.
"use strict";

const { run, runMigrations, Logger } = require("graphile-worker");
const fs = require("fs");
const { performance } = require("perf_hooks");

const args = process.argv.slice(2);
const connectionString = process.env.DATABASE_URL;
const concurrency = Number(process.env.E2E_CONCURRENCY || 4);

if (!connectionString) {
  console.error("worker.js: DATABASE_URL is not set");
  process.exit(2);
}

const logger = new Logger(() => (level, message) => {
  if (level === "error" || level === "warning") console.error(`graphile-worker ${level}: ${message}`);
});

function nowUs() {
  return Math.round((performance.timeOrigin + performance.now()) * 1000);
}

async function main() {
  if (args[0] === "--migrate") {
    await runMigrations({ connectionString, logger });
    return;
  }
  let pickupLog = null;
  if (args[0] === "--pickup-log" && args[1]) pickupLog = args[1];
  else if (args.length) {
    console.error("usage: node worker.js --migrate | node worker.js [--pickup-log FILE]");
    process.exit(2);
  }

  const pickups = [];
  let tasks = 0;
  const runner = await run({
    connectionString,
    concurrency,
    noHandleSignals: true,
    logger,
    taskList: {
      noop: async (payload, helpers) => {
        if (pickupLog) pickups.push(`${helpers.job.id} ${nowUs()}\n`);
        tasks++;
      },
    },
  });
  console.log("ready");

  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    await runner.stop();
    if (pickupLog) fs.writeFileSync(pickupLog, pickups.join(""));
    const cpu = process.cpuUsage();
    console.log(`graphile-worker: tasks ${tasks}, cpu_s ${((cpu.user + cpu.system) / 1e6).toFixed(3)}`);
    process.exit(0);
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}

main().catch((e) => {
  console.error("worker.js:", e);
  process.exit(1);
});

import { clone, create } from "@bufbuild/protobuf";
import { durationFromMs, durationMs, timestampMs } from "@bufbuild/protobuf/wkt";
import type { GatewayStep, HeartbeatStep, PollStep, SettleStep } from "@taskq/sdk/conformance";
import {
  AdminService,
  ClaimRequestSchema,
  type ClaimResponse,
  type JobSpec,
  JobSpecSchema,
  JobState,
  LeaseRefSchema,
  LeaseState,
  ProducerService,
  type Settlement,
  SettlementSchema,
  type SettleResult,
  SettleStatus,
  ThrottleReason,
  WorkerService,
} from "@taskq/sdk/proto";
import type { Session } from "./session.js";

const methods = {
  claim: WorkerService.method.claim,
  claimOnce: WorkerService.method.claimOnce,
  settle: WorkerService.method.settle,
  heartbeat: WorkerService.method.heartbeat,
  enqueue: ProducerService.method.enqueue,
  enqueueStream: ProducerService.method.enqueueStream,
  getJob: ProducerService.method.getJob,
  cancelJob: ProducerService.method.cancelJob,
  ensureQueue: AdminService.method.ensureQueue,
  pauseQueue: AdminService.method.pauseQueue,
  setQueueThrottle: AdminService.method.setQueueThrottle,
  setQueueConcurrency: AdminService.method.setQueueConcurrency,
} as const;

/** What a step found wrong; empty when its answer was as expected. */
export type StepFailures = string[];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const name = (e: Record<number, string>, v: number) => e[v] ?? String(v);

/** Run one step; `record` gets what went over the wire, for the report. */
export async function runStep(
  s: Session,
  step: GatewayStep,
  record: (x: unknown) => void,
): Promise<StepFailures> {
  const a = step.action;
  switch (a.case) {
    case "enqueue": {
      const spec = a.value.spec ? clone(JobSpecSchema, a.value.spec) : create(JobSpecSchema);
      spec.queue ||= s.queue;
      const job = a.value.job;
      const enqueue = async () => {
        const jobId = a.value.stream
          ? await enqueueOnStream(s, spec)
          : (await s.call(methods.enqueue, create(methods.enqueue.input, { job: spec }))).jobId;
        s.jobIds.set(job, jobId);
        record({ enqueued: job, id: jobId });
      };
      if (!a.value.after) await enqueue();
      else s.background.push(sleep(durationMs(a.value.after)).then(enqueue));
      return [];
    }
    case "poll":
      return poll(s, a.value, record);
    case "settle":
      return settle(s, a.value, record);
    case "heartbeat":
      return heartbeat(s, a.value, record);
    case "sleep":
      await sleep(durationMs(a.value));
      return [];
    case "cancelJob":
      await s.call(methods.cancelJob, create(methods.cancelJob.input, { jobId: s.jobId(a.value) }));
      return [];
    case "checkJob": {
      const res = await s.call(methods.getJob, create(methods.getJob.input, { jobId: s.jobId(a.value.job) }));
      const job = res.job;
      record({ job: a.value.job, state: name(JobState, job?.state ?? 0), attempt: job?.attempt });
      const out: StepFailures = [];
      if (job?.state !== a.value.state)
        out.push(
          `job ${a.value.job} is ${name(JobState, job?.state ?? 0)}, want ${name(JobState, a.value.state)}`,
        );
      if (a.value.attempt && job?.attempt !== a.value.attempt)
        out.push(`job ${a.value.job} is at attempt ${job?.attempt}, want ${a.value.attempt}`);
      return out;
    }
    case "throttleQueue": {
      const { limit, periodMs } = a.value;
      await ensureQueue(s);
      await s.call(
        methods.setQueueThrottle,
        create(methods.setQueueThrottle.input, { queue: s.queue, limit, periodMs }),
      );
      return [];
    }
    case "maxRunning":
      await ensureQueue(s);
      await s.call(
        methods.setQueueConcurrency,
        create(methods.setQueueConcurrency.input, { queue: s.queue, maxRunning: a.value }),
      );
      return [];
    case "pauseQueue":
      await ensureQueue(s);
      await s.call(methods.pauseQueue, create(methods.pauseQueue.input, { queue: s.queue }));
      return [];
    default:
      throw new Error("a step names no action");
  }
}

/** A one-job batch on the session's EnqueueStream; the batch's error is thrown with its status code. */
async function enqueueOnStream(s: Session, spec: JobSpec): Promise<string> {
  const res = await s.send(methods.enqueueStream, create(methods.enqueueStream.input, { jobs: [spec] }));
  if (res.error) throw Object.assign(new Error(res.error.message), { code: res.error.code });
  const id = res.results[0]?.jobId;
  if (!id) throw new Error(`EnqueueStream answered ${res.results.length} results for one job`);
  return id;
}

/** Operator verbs refuse a queue never seen (taskq answers NOT_FOUND): the case's queue is created first. */
async function ensureQueue(s: Session): Promise<void> {
  await s.call(methods.ensureQueue, create(methods.ensureQueue.input, { queue: s.queue }));
}

async function poll(s: Session, p: PollStep, record: (x: unknown) => void): Promise<StepFailures> {
  const req = create(ClaimRequestSchema, p.request ?? {});
  if (!p.raw) {
    if (req.queues.length === 0) req.queues = [s.queue];
    req.maxJobs ||= 10;
  }
  req.settlements.push(...p.settle.map((x) => settlementOf(s, x)));
  if (p.once && p.halfCloseAfter) throw new Error("a poll step cannot both use ClaimOnce and half-close");
  const halfCloseAfterMs = p.halfCloseAfter ? durationMs(p.halfCloseAfter) : undefined;
  const started = performance.now();
  const res: ClaimResponse = p.once
    ? await s.call(methods.claimOnce, req)
    : await s.send(methods.claim, req, { halfCloseAfterMs });
  const took = performance.now() - started;
  await Promise.all(s.background);
  record({
    ...(halfCloseAfterMs !== undefined && { halfClosedAfterMs: halfCloseAfterMs }),
    answeredInMs: Math.round(took),
    jobs: res.jobs.map((j) => `${j.id}/${j.attempt}`),
    verdicts: res.throttled.map((v) => name(ThrottleReason, v.reason)),
    ...(p.settle.length > 0 && {
      settled: res.settleResults.map(
        (r) => `${r.lease?.jobId}/${r.lease?.attempt} ${name(SettleStatus, r.status)}`,
      ),
    }),
  });
  for (const j of res.jobs) {
    s.attempts.set(j.id, j.attempt);
    if (j.leaseDeadline) s.deadlines.set(j.id, timestampMs(j.leaseDeadline));
  }
  const out: StepFailures = [];
  if (res.settleResults.length !== p.settle.length)
    out.push(`poll answered ${res.settleResults.length} settle results for ${p.settle.length} settlements`);
  for (const [i, x] of p.settle.entries())
    out.push(...settleResultFailures(req.settlements[i]?.lease, x, res.settleResults[i]));
  const want = p.jobs.map((n) => s.jobId(n)).sort();
  const got = res.jobs.map((j) => j.id).sort();
  if (want.join() !== got.join())
    out.push(`poll answered jobs [${got.join(", ")}], want [${want.join(", ")}]`);
  if (p.attempt)
    for (const j of res.jobs)
      if (j.attempt !== p.attempt) out.push(`job ${j.id} came with attempt ${j.attempt}, want ${p.attempt}`);
  for (const j of res.jobs)
    if (!j.leaseDeadline || timestampMs(j.leaseDeadline) <= Date.now() - 1_000)
      out.push(`job ${j.id} came without a future lease deadline`);
  const verdicts = res.throttled.filter((v) => v.queue === s.queue);
  if (p.verdict === ThrottleReason.UNSPECIFIED && res.throttled.length > 0)
    out.push(
      `poll answered verdicts ${res.throttled.map((v) => name(ThrottleReason, v.reason)).join(", ")}, want none`,
    );
  if (p.verdict !== ThrottleReason.UNSPECIFIED) {
    const v = verdicts.find((x) => x.reason === p.verdict);
    if (!v) out.push(`poll answered no ${name(ThrottleReason, p.verdict)} verdict for ${s.queue}`);
    else if (!v.retryAfter || durationMs(v.retryAfter) <= 0)
      out.push("the verdict carries no positive retry_after");
    else if (p.retryAfterAtMost && durationMs(v.retryAfter) > durationMs(p.retryAfterAtMost))
      out.push(
        `its retry_after is ${durationMs(v.retryAfter)} ms, want at most ${durationMs(p.retryAfterAtMost)} ms`,
      );
  }
  if (p.answeredAfter && took < durationMs(p.answeredAfter))
    out.push(
      `poll answered after ${Math.round(took)} ms, want no sooner than ${durationMs(p.answeredAfter)} ms`,
    );
  if (p.answeredWithin && took > durationMs(p.answeredWithin))
    out.push(`poll answered after ${Math.round(took)} ms, want within ${durationMs(p.answeredWithin)} ms`);
  return out;
}

function lease(s: Session, job: string, jobIdLiteral: string, attempt: number) {
  const jobId = jobIdLiteral || s.jobId(job);
  return { jobId, attempt: attempt || s.attempts.get(jobId) || 1 };
}

/** A SettleStep's settlement, its lease filled in. */
function settlementOf(s: Session, p: SettleStep): Settlement {
  const settlement = p.settlement ? clone(SettlementSchema, p.settlement) : create(SettlementSchema);
  settlement.lease = create(LeaseRefSchema, lease(s, p.job, p.jobId, p.attempt));
  settlement.duration ??= durationFromMs(5);
  return settlement;
}

/** How one settle result differs from what the step expects. */
function settleResultFailures(
  ref: { jobId: string; attempt: number } | undefined,
  p: SettleStep,
  r: SettleResult | undefined,
): StepFailures {
  const out: StepFailures = [];
  if (r?.status !== p.status)
    out.push(
      `settle of ${ref?.jobId}/${ref?.attempt} answered ${name(SettleStatus, r?.status ?? 0)}, want ${name(SettleStatus, p.status)}`,
    );
  if (p.state && r?.state !== p.state)
    out.push(`settle left the job ${name(JobState, r?.state ?? 0)}, want ${name(JobState, p.state)}`);
  return out;
}

async function settle(s: Session, p: SettleStep, record: (x: unknown) => void): Promise<StepFailures> {
  const settlement = settlementOf(s, p);
  const ref = settlement.lease;
  const res = await s.send(methods.settle, create(methods.settle.input, { settlements: [settlement] }));
  const [r] = res.results;
  record({
    settled: `${ref?.jobId}/${ref?.attempt}`,
    status: name(SettleStatus, r?.status ?? 0),
    state: name(JobState, r?.state ?? 0),
  });
  const out: StepFailures = [];
  if (res.results.length !== 1) out.push(`settle answered ${res.results.length} results for 1 settlement`);
  out.push(...settleResultFailures(ref, p, r));
  return out;
}

async function heartbeat(s: Session, p: HeartbeatStep, record: (x: unknown) => void): Promise<StepFailures> {
  const ref = lease(s, p.job, "", p.attempt);
  const res = await s.send(
    methods.heartbeat,
    create(methods.heartbeat.input, { leases: [ref], extendBy: p.extendBy }),
  );
  const [st] = res.leases;
  const deadline = st?.leaseDeadline ? timestampMs(st.leaseDeadline) : undefined;
  record({ beat: `${ref.jobId}/${ref.attempt}`, state: name(LeaseState, st?.state ?? 0), deadline });
  const out: StepFailures = [];
  if (st?.state !== p.state)
    out.push(
      `heartbeat of ${ref.jobId}/${ref.attempt} answered ${name(LeaseState, st?.state ?? 0)}, want ${name(LeaseState, p.state)}`,
    );
  if (p.deadlineMoved) {
    const before = s.deadlines.get(ref.jobId) ?? 0;
    if (deadline === undefined || deadline <= before)
      out.push(`heartbeat did not move the lease deadline past ${new Date(before).toISOString()}`);
  }
  if (deadline !== undefined) s.deadlines.set(ref.jobId, deadline);
  return out;
}

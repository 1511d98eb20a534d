"""A taskq worker on plain generated gRPC stubs: one Claim, one Heartbeat and one Settle stream.

The contract it follows (proto/taskq/v1/worker.proto): each poll gets exactly one answer; a verdict
sleeps its queue for exactly retry_after and is no error; leases are heartbeated before their deadline
and (job id, attempt) fences every heartbeat and settle; a lost lease aborts the handler and is never
settled; a stop drains: poll no more, let handlers finish until the grace deadline, then release the
stragglers as retryable failures.

Prefetch (Settings.prefetch > 0): the worker holds up to concurrency + prefetch jobs. Each poll asks
for the free handler slots plus the room left in the buffer and states concurrency and prefetch, so the
gateway knows which of the jobs it asks for would wait in the buffer. A poll with no free handler slot
only tops up the buffer: it does not wait (max_wait 0), and after an empty answer the worker polls
again only once a held job is settled. Buffered jobs are heartbeated like running ones and start in
claim order as handler slots free. An unstarted job is given back (a Released
settlement: the gateway makes it ready again at once, the attempt uncounted) when a poll's answer says
its queue is PAUSED or BREAKER_OPEN, when its heartbeat says CANCEL_REQUESTED, and at the stop.
"""

import sys
import threading
import time
from dataclasses import dataclass, field

import grpc
from backoff import Backoff
from bidi import Bidi
from google.protobuf import duration_pb2
from settler import Settler
from taskq.v1 import job_pb2, worker_pb2, worker_pb2_grpc

# Verdicts that make the worker give back its unstarted jobs of the queue: none would start soon.
GIVE_BACK = (job_pb2.THROTTLE_REASON_PAUSED, job_pb2.THROTTLE_REASON_BREAKER_OPEN)
MIN_BEAT_S = 0.1  # floor between beats, so a lease that looks expired can't make a tight loop
# How long an idle draining worker waits for its outstanding poll's answer before cancelling the stream.
POLL_ANSWER_ON_DRAIN_S = 1.0


def duration(seconds: float) -> duration_pb2.Duration:
    d = duration_pb2.Duration()
    d.FromMilliseconds(int(round(seconds * 1000)))
    return d


@dataclass
class Settings:
    target: str
    token: str
    queues: list
    concurrency: int
    worker_id: str
    lease_s: float | None
    max_wait_s: float
    grace_s: float
    reconnect_initial_s: float
    reconnect_max_s: float
    prefetch: int = 0  # jobs held beyond the free handler slots; 0 holds none


@dataclass
class Active:
    job: object
    deadline: float  # time.monotonic() at which the lease ends
    abort: threading.Event = field(default_factory=threading.Event)
    started: float = field(default_factory=time.monotonic)
    due: float = 0.0  # when it wants its next heartbeat
    running: bool = False  # its handler started; until then it waits in the buffer
    settling: bool = False
    lost: bool = False
    cancel: bool = False


class Worker:
    def __init__(self, s: Settings, handler) -> None:
        """handler(job, abort_event) -> ("success", bytes) | ("failure", Failure) | ("aborted", None)."""
        self.s = s
        self.handler = handler
        metadata = (("authorization", f"Bearer {s.token}"),) if s.token else None
        self.metadata = metadata
        self.stub = worker_pb2_grpc.WorkerServiceStub(grpc.insecure_channel(s.target))
        self.cond = threading.Condition()
        self.active: dict = {}
        self.capacity = s.concurrency + s.prefetch  # jobs held at once, running or buffered
        self.used = 0  # slots held: jobs claimed and not yet settled or given up
        self.slot_awaited = False  # a top-up poll found nothing: the next waits for a held job to go
        self.running = 0  # handlers running
        self.buffer: list = []  # keys of held jobs not started yet, in claim order
        self.sleep_until: dict = {}  # queue -> time.monotonic() it may be polled again
        self.stopping = False
        self.beating = True  # heartbeats go on through a drain, until the stragglers are given up
        self.claim_stream: Bidi | None = None
        self.claim_thread: threading.Thread | None = None
        self.settler = Settler(self.stub, metadata, self._backoff())

    def _backoff(self) -> Backoff:
        return Backoff(self.s.reconnect_initial_s, self.s.reconnect_max_s)

    def start(self) -> None:
        self.claim_thread = threading.Thread(target=self._claim_loop, name="claim", daemon=True)
        self.claim_thread.start()
        threading.Thread(target=self._heartbeat_loop, name="heartbeat", daemon=True).start()

    # --- claiming ---------------------------------------------------------------------------------

    def _awake(self, now: float) -> list:
        return [q for q in self.s.queues if self.sleep_until.get(q, 0) <= now]

    def _claim_loop(self) -> None:
        backoff = self._backoff()
        while not self.stopping:
            stream = Bidi(lambda it: self.stub.Claim(it, metadata=self.metadata))
            self.claim_stream = stream
            try:
                while True:
                    with self.cond:
                        while not self.stopping:
                            now = time.monotonic()
                            free = self.capacity - self.used
                            if free > 0 and not self.slot_awaited and self._awake(now):
                                break
                            wakes = [t for t in self.sleep_until.values() if t > now]
                            timed = free > 0 and not self.slot_awaited and wakes
                            self.cond.wait(min(wakes) - now if timed else None)
                        if self.stopping:
                            break
                        now = time.monotonic()
                        queues = self._awake(now)
                        n = self.capacity - self.used
                        self.used += n
                        # A long poll must not outlast a sleeping queue's retry_after.
                        wakes = [t - now for t in self.sleep_until.values() if t > now]
                        wait_s = min([self.s.max_wait_s, *wakes])
                    # No free handler slot (every slot's job held): this poll only tops up the buffer.
                    top_up = n <= self.s.prefetch
                    request = worker_pb2.ClaimRequest(
                        queues=queues,
                        max_jobs=n,
                        max_wait=duration(0 if top_up else wait_s),
                        worker_id=self.s.worker_id,
                        concurrency=self.s.concurrency,
                        prefetch=self.s.prefetch,
                    )
                    if self.s.lease_s is not None:
                        request.lease_duration.CopyFrom(duration(self.s.lease_s))
                    stream.send(request)
                    try:
                        response = stream.recv()
                    except BaseException:
                        with self.cond:
                            self.used -= n
                            self.cond.notify_all()
                        raise
                    backoff.reset()
                    self._answered(response, n, top_up)
                stream.close()
                return
            except (grpc.RpcError, EOFError) as err:
                if self.stopping:
                    return
                print(f"claim stream failed ({err}); reconnecting", file=sys.stderr)
                delay = backoff.next()
                with self.cond:
                    self.cond.wait_for(lambda: self.stopping, delay)

    def _answered(self, response, reserved: int, top_up: bool) -> None:
        now = time.monotonic()
        with self.cond:
            for v in response.throttled:
                # A verdict is not an error: sleep that queue exactly retry_after; unknown reasons too.
                self.sleep_until[v.queue] = now + v.retry_after.ToMilliseconds() / 1000
                # Pause is exact for starts too: no buffered job of a paused (or broken) queue starts.
                if v.reason in GIVE_BACK:
                    name = job_pb2.ThrottleReason.Name(v.reason).removeprefix("THROTTLE_REASON_")
                    self._release_buffered(v.queue, f"queue {name}")
            self.used += len(response.jobs) - reserved
            # Polled again at once, an empty top-up would loop: wait for a held job to go, unless one
            # already went while the poll was out.
            self.slot_awaited = top_up and not response.jobs and self.used >= self.s.concurrency
            for job in response.jobs:
                a = Active(job=job, deadline=now + self._remaining(job.lease_deadline))
                a.due = self._due(a.deadline)
                key = (job.id, job.attempt)
                self.active[key] = a
                self.buffer.append(key)
            self._start_buffered()
            self.cond.notify_all()

    def _start_buffered(self) -> None:
        """Under self.cond: start buffered jobs, oldest claim first, while handler slots are free. A
        stopping worker gives back what it cannot start (a poll answered at the stop may bring jobs)."""
        while self.buffer and self.running < self.s.concurrency:
            key = self.buffer.pop(0)
            a = self.active[key]
            a.running = True
            a.started = time.monotonic()
            self.running += 1
            threading.Thread(target=self._run, args=(a.job,), daemon=True).start()
        if self.stopping:
            self._release_buffered(None, "worker stopping")

    def _release_buffered(self, queue, reason: str) -> None:
        """Under self.cond: give back unstarted jobs, of one queue or (None) all: a Released each."""
        for key in [k for k in self.buffer if queue is None or self.active[k].job.queue == queue]:
            self.buffer.remove(key)
            self._settle(key, self.active[key], released=worker_pb2.Released(reason=reason))

    @staticmethod
    def _remaining(ts) -> float:
        return ts.ToMilliseconds() / 1000 - time.time()

    def _due(self, deadline: float) -> float:
        now = time.monotonic()
        remaining = deadline - now
        if self.s.lease_s is not None:
            remaining = min(remaining, self.s.lease_s)
        return now + max(MIN_BEAT_S, remaining / 3)

    # --- running and settling ---------------------------------------------------------------------

    def _run(self, job) -> None:
        key = (job.id, job.attempt)
        a = self.active[key]
        kind, value = self.handler(job, a.abort)
        with self.cond:
            self.running -= 1
            self._start_buffered()
            if a.settling:
                return  # settled at the shutdown deadline already
            if a.lost:
                return self._finish(key)
        if a.cancel:
            self._settle(key, a, cancelled=worker_pb2.Cancelled(reason="cancel requested"))
        elif kind == "success":
            self._settle(key, a, success=worker_pb2.Success(result=value))
        elif kind == "failure":
            self._settle(key, a, failure=value)
        else:
            with self.cond:
                self._finish(key)

    def _settle(self, key, a: Active, **outcome) -> None:
        with self.cond:
            a.settling = True
        settlement = worker_pb2.Settlement(
            lease=worker_pb2.LeaseRef(job_id=a.job.id, attempt=a.job.attempt),
            duration=duration(time.monotonic() - a.started),
            **outcome,
        )
        self.settler.settle(settlement, lambda result: self._settled(key, result))

    def _settled(self, key, result) -> None:
        if result is not None and result.status != worker_pb2.SETTLE_STATUS_ACCEPTED:
            print(f"settle of {key} refused: {result.status}", file=sys.stderr)
        with self.cond:
            self._finish(key)

    def _finish(self, key) -> None:
        """Under self.cond: the job no longer holds its slot."""
        if self.active.pop(key, None) is not None:
            self.used -= 1
            self.slot_awaited = False
            self.cond.notify_all()

    # --- heartbeats -------------------------------------------------------------------------------

    def _heartbeat_loop(self) -> None:
        backoff = self._backoff()
        while self.beating:
            stream = Bidi(lambda it: self.stub.Heartbeat(it, metadata=self.metadata))
            try:
                while self.beating:
                    with self.cond:
                        while self.beating:
                            held = {k: a for k, a in self.active.items() if not a.settling and not a.lost}
                            earliest = min((a.due for a in held.values()), default=None)
                            if earliest is not None and earliest <= time.monotonic():
                                break
                            self.cond.wait(None if earliest is None else earliest - time.monotonic())
                        if not self.beating:
                            break
                    keys = list(held)
                    leases = [worker_pb2.LeaseRef(job_id=j, attempt=n) for j, n in keys]
                    stream.send(worker_pb2.HeartbeatRequest(leases=leases))
                    response = stream.recv()
                    backoff.reset()
                    self._beaten(keys, response)
                stream.cancel()
            except (grpc.RpcError, EOFError) as err:
                stream.cancel()
                if not self.beating:
                    return
                print(f"heartbeat stream failed ({err}); reconnecting", file=sys.stderr)
                time.sleep(backoff.next())

    def _beaten(self, keys, response) -> None:
        with self.cond:
            for key, status in zip(keys, response.leases):
                a = self.active.get(key)
                if a is None or a.settling:
                    continue  # settled while the beat was out
                if status.state == worker_pb2.LEASE_STATE_LEASE_LOST:
                    a.lost = True
                    a.abort.set()
                    if key in self.buffer:  # never started: nothing to abort or settle
                        self.buffer.remove(key)
                        self._finish(key)
                    continue
                if status.HasField("lease_deadline"):
                    a.deadline = time.monotonic() + self._remaining(status.lease_deadline)
                a.due = self._due(a.deadline)
                if status.state == worker_pb2.LEASE_STATE_CANCEL_REQUESTED and key in self.buffer:
                    # Never started: given back, and the gateway cancels it (a cancel is pending).
                    self.buffer.remove(key)
                    self._settle(key, a, released=worker_pb2.Released(reason="cancel requested"))
                elif status.state == worker_pb2.LEASE_STATE_CANCEL_REQUESTED:
                    a.cancel = True
                    a.abort.set()
            self.cond.notify_all()

    # --- stopping ---------------------------------------------------------------------------------

    def stop(self, grace_s: float) -> None:
        """Poll no more, let handlers finish until the grace deadline, release the stragglers."""
        deadline = time.monotonic() + grace_s
        with self.cond:
            self.stopping = True
            self._release_buffered(None, "worker stopping")
            self.cond.notify_all()
        # Half-close the claim stream: the gateway answers an outstanding long poll at once, on a live
        # stream, so jobs it claimed a moment before the stop still reach us (and run, and settle) rather
        # than being lost in a reset and left RUNNING until their leases expire. A gateway that does not
        # answer has the stream cancelled after POLL_ANSWER_ON_DRAIN_S.
        if self.claim_stream is not None:
            self.claim_stream.close()
        if self.claim_thread is not None:
            self.claim_thread.join(max(0.0, min(grace_s, POLL_ANSWER_ON_DRAIN_S)))
        if self.claim_stream is not None and self.claim_thread is not None and self.claim_thread.is_alive():
            self.claim_stream.cancel()  # an outstanding long poll must not hold up the stop
        with self.cond:
            while any(not a.lost for a in self.active.values()) and time.monotonic() < deadline:
                self.cond.wait(deadline - time.monotonic())
            stragglers = [(k, a) for k, a in self.active.items() if not a.settling and not a.lost]
            self.beating = False
            self.cond.notify_all()
        for key, a in stragglers:
            a.abort.set()
            failure = job_pb2.Failure(
                type="WorkerShutdown", message="worker stopped before the handler finished", retryable=True
            )
            failure.retry_after.CopyFrom(duration(0))
            self._settle(key, a, failure=failure)
        self.settler.close(time.monotonic() + 5)

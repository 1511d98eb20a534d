#!/usr/bin/python3
"""The conformance adapter of a Python worker that uses only stubs generated from proto/.

Speaks the runner <-> program protocol (conformance/README.md): StartWorker in, Ready out, handler
events out, StopWorker in, Stopped out, exit 0. Run it under the suite with Debian's interpreter:
    npx taskq-conformance worker -- /usr/bin/python3 conformance/adapters/python/adapter.py
"""

import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from stubs import load_stubs  # noqa: E402

load_stubs()

from google.protobuf import json_format  # noqa: E402
from taskq.conformance.v1 import adapter_pb2  # noqa: E402
from taskq.v1 import job_pb2  # noqa: E402
from worker import Settings, Worker  # noqa: E402

_out = threading.Lock()


def send(message: adapter_pb2.ProgramMessage) -> None:
    line = json_format.MessageToJson(message, indent=None)
    with _out:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def handler_event(job, kind) -> None:
    send(adapter_pb2.ProgramMessage(handler=adapter_pb2.HandlerEvent(job_id=job.id, attempt=job.attempt, kind=kind)))


def read(kind: str):
    """The next runner message of this kind (start or stop)."""
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json_format.Parse(line, adapter_pb2.RunnerMessage())
        if message.WhichOneof("message") == kind:
            return getattr(message, kind)
    raise EOFError(f"stdin ended before a {kind} message")


def generic_handler(job, abort: threading.Event):
    """Does what the job's payload (a JobInstruction) says."""
    ins = json_format.Parse(job.payload.decode("utf-8"), adapter_pb2.JobInstruction())
    handler_event(job, adapter_pb2.HANDLER_EVENT_KIND_STARTED)
    run_s = ins.run.ToMilliseconds() / 1000
    if ins.ignore_abort:
        time.sleep(run_s)
        finished = True
    else:
        finished = not abort.wait(run_s)
    kind = adapter_pb2.HANDLER_EVENT_KIND_FINISHED if finished else adapter_pb2.HANDLER_EVENT_KIND_ABORTED
    handler_event(job, kind)
    if not finished:
        return "aborted", None
    if ins.WhichOneof("outcome") == "fail":
        failure = job_pb2.Failure()
        failure.CopyFrom(ins.fail)
        return "failure", failure
    return "success", ins.succeed.result.encode("utf-8")


def seconds(d, default=None):
    return d.ToMilliseconds() / 1000 if d.ByteSize() > 0 else default


def main() -> None:
    start = read("start")
    settings = Settings(
        target=start.gateway_url.removeprefix("http://"),
        token=start.token or os.environ.get("TASKQ_TOKEN", ""),
        queues=list(start.queues),
        concurrency=start.concurrency or 10,
        worker_id=start.worker_id or f"{os.uname().nodename}/{os.getpid()}/python",
        lease_s=seconds(start.lease_duration) if start.HasField("lease_duration") else None,
        max_wait_s=seconds(start.max_wait, 30.0),
        grace_s=seconds(start.shutdown_grace, 30.0),
        reconnect_initial_s=seconds(start.reconnect_initial, 0.1),
        reconnect_max_s=seconds(start.reconnect_max, 10.0),
        prefetch=start.prefetch,
    )
    worker = Worker(settings, generic_handler)
    worker.start()
    ready = adapter_pb2.Ready(implementation="python grpcio stubs", features=["prefetch"])
    send(adapter_pb2.ProgramMessage(ready=ready))
    stop = read("stop")
    worker.stop(seconds(stop.grace, settings.grace_s) if stop.HasField("grace") else settings.grace_s)
    send(adapter_pb2.ProgramMessage(stopped=adapter_pb2.Stopped()))
    # Handler threads that ignore their abort may still sleep: they hold nothing we need.
    os._exit(0)


if __name__ == "__main__":
    main()

import { type DescMessage, type MessageShape, toJson } from "@bufbuild/protobuf";
import { type HandlerEvent, HandlerEventSchema } from "@taskq/sdk/conformance";
import {
  type ClaimRequest,
  ClaimRequestSchema,
  type ClaimResponse,
  ClaimResponseSchema,
  type HeartbeatRequest,
  HeartbeatRequestSchema,
  type HeartbeatResponse,
  HeartbeatResponseSchema,
  type SettleRequest,
  SettleRequestSchema,
  type SettleResponse,
  SettleResponseSchema,
} from "@taskq/sdk/proto";

export type StreamName = "claim" | "heartbeat" | "settle";

/**
 * How a stream ended without a scripted failure: the worker half-closed it (ended its requests on a
 * live call, and got every answer), the worker cancelled it (a reset, also when it half-closed first
 * but reset before the last answer), or the reference gateway cut it: when the case ended, or with the
 * connection it dropped under another stream's answer.
 */
export type EndHow = "half-closed" | "cancelled" | "gateway";

/** A lease deadline, on the trace's clock (ms since the case started). */
export type DeadlineT = number;

/** One thing the reference gateway or the runner saw, at `t` ms (monotonic) since the case started. */
export type TraceEvent =
  /** `authorization` is the header the call carried ("" for none). */
  | { type: "open"; t: number; stream: StreamName; id: number; authorization: string }
  /**
   * The reference gateway ended the stream with an error status (scripted fault), or dropped its
   * connection partway through an answer (`code` CONNECTION_DROPPED).
   */
  | { type: "fail"; t: number; stream: StreamName; id: number; code: string }
  /** The stream ended otherwise: `how` says who ended it. */
  | { type: "end"; t: number; stream: StreamName; id: number; how: EndHow }
  | { type: "poll"; t: number; id: number; req: ClaimRequest }
  | { type: "claim_answer"; t: number; id: number; res: ClaimResponse; deadlines: DeadlineT[] }
  /** The answer above could not be delivered (the worker cancelled): its jobs went back. */
  | { type: "claim_released"; t: number; id: number; leases: string[] }
  | { type: "beat"; t: number; id: number; req: HeartbeatRequest }
  | { type: "beat_answer"; t: number; id: number; res: HeartbeatResponse; deadlines: DeadlineT[] }
  | { type: "settle"; t: number; id: number; req: SettleRequest }
  | { type: "settle_answer"; t: number; id: number; res: SettleResponse }
  /** `features`: the optional features the program says it has (Ready.features). */
  | { type: "ready"; t: number; implementation: string; features: string[] }
  | { type: "handler"; t: number; event: HandlerEvent }
  | { type: "stop_sent"; t: number }
  | { type: "stopped"; t: number }
  | { type: "exit"; t: number; code: number | null; signal: string | null }
  /** Something the runner could not accept from the program (a bad line, a crash). */
  | { type: "protocol_error"; t: number; detail: string };

type Payload<E extends TraceEvent["type"]> = Omit<Extract<TraceEvent, { type: E }>, "type" | "t">;

/** The wire trace of one case: every message with a monotonic timestamp, in arrival order. */
export class Trace {
  readonly events: TraceEvent[] = [];
  readonly #origin = performance.now();

  /** Ms since the case started. */
  now(): number {
    return performance.now() - this.#origin;
  }

  add<E extends TraceEvent["type"]>(type: E, payload: Payload<E>): void {
    this.events.push({ type, t: this.now(), ...payload } as TraceEvent);
  }

  of<E extends TraceEvent["type"]>(type: E): Extract<TraceEvent, { type: E }>[] {
    return this.events.filter((e): e is Extract<TraceEvent, { type: E }> => e.type === type);
  }

  /** When the event happened, or undefined if it never did. */
  first<E extends TraceEvent["type"]>(type: E): Extract<TraceEvent, { type: E }> | undefined {
    return this.of(type)[0];
  }

  /** The trace as JSON (messages in proto JSON), for reports. */
  toJSON(): unknown[] {
    return this.events.map((e) => {
      const t = Math.round(e.t * 10) / 10;
      switch (e.type) {
        case "poll":
          return { ...e, t, req: json(ClaimRequestSchema, e.req) };
        case "claim_answer":
          return { ...e, t, res: json(ClaimResponseSchema, e.res) };
        case "beat":
          return { ...e, t, req: json(HeartbeatRequestSchema, e.req) };
        case "beat_answer":
          return { ...e, t, res: json(HeartbeatResponseSchema, e.res) };
        case "settle":
          return { ...e, t, req: json(SettleRequestSchema, e.req) };
        case "settle_answer":
          return { ...e, t, res: json(SettleResponseSchema, e.res) };
        case "handler":
          return { ...e, t, event: json(HandlerEventSchema, e.event) };
        default:
          return { ...e, t };
      }
    });
  }
}

function json<D extends DescMessage>(schema: D, m: MessageShape<D>): unknown {
  return toJson(schema, m);
}

/** "<job id>/<attempt>": how the trace names a lease. */
export const leaseKey = (jobId: string, attempt: number) => `${jobId}/${attempt}`;

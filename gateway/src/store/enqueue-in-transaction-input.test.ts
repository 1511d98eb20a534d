import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { engines } from "../testing/services.js";
import type { Db } from "./db.js";

// Bad input to taskq.enqueue and taskq.enqueue_batch: each an invalid_parameter_value naming the field,
// with the RPC's ranges, and nothing written.

/** Options and the message each draws: every option's type and range, and a key that is no option. */
const badOptions: [Record<string, unknown>, string][] = [
  [{ priority: 32768 }, "priority must be from -32768 to 32767 (got 32768)"],
  [{ priority: -32769 }, "priority must be from -32768 to 32767 (got -32769)"],
  [{ priority: 1.5 }, "priority must be from -32768 to 32767 (got 1.5)"],
  [{ priority: "1" }, "priority must be a whole number (got a JSON string)"],
  [{ delay_ms: -1 }, "delay_ms must be from 0 to 315360000000 (got -1)"],
  [{ delay_ms: 315360000001 }, "delay_ms must be from 0 to 315360000000 (got 315360000001)"],
  [{ delay_ms: true }, "delay_ms must be a whole number (got a JSON boolean)"],
  [{ ttl_seconds: -1 }, "ttl_seconds must be from 0 to 315360000 (got -1)"],
  [{ ttl_seconds: 315360001 }, "ttl_seconds must be from 0 to 315360000 (got 315360001)"],
  [{ ttl_seconds: [60] }, "ttl_seconds must be a whole number (got a JSON array)"],
  [{ max_attempts: 1001 }, "max_attempts must be from 1 to 1000 (got 1001)"],
  [{ max_attempts: -1 }, "max_attempts must be from 1 to 1000 (got -1)"],
  [{ max_attempts: 2.5 }, "max_attempts must be from 1 to 1000 (got 2.5)"],
  [{ max_attempts: "3" }, "max_attempts must be a whole number (got a JSON string)"],
  [
    { run_at: "2030-01-02T03:04:05" },
    'run_at must be an ISO 8601 time with a zone, e.g. "2030-01-02T03:04:05Z"',
  ],
  [{ run_at: "tomorrow" }, 'run_at must be an ISO 8601 time with a zone, e.g. "2030-01-02T03:04:05Z"'],
  [{ run_at: 1893456000000 }, 'run_at must be an ISO 8601 time with a zone, e.g. "2030-01-02T03:04:05Z"'],
  [{ run_at: "2030-13-02T03:04:05Z" }, "run_at must be a valid time (got 2030-13-02T03:04:05Z)"],
  [{ run_at: "1969-12-31T23:59:59Z" }, "run_at must be a time between 1970 and 9999"],
  [
    { run_at: "2030-01-02T03:04:05Z", delay_ms: 10 },
    "run_at must not be given with delay_ms (give one or neither)",
  ],
  [{ flow_key: "f".repeat(256) }, "flow_key must be at most 255 bytes (got 256)"],
  [{ flow_key: 7 }, "flow_key must be a string (got a JSON number)"],
  [{ idempotency_key: "é".repeat(128) }, "idempotency_key must be at most 255 bytes (got 256)"],
  [{ idempotency_key: { k: 1 } }, "idempotency_key must be a string (got a JSON object)"],
  [{ content_type: "t".repeat(256) }, "content_type must be at most 255 bytes (got 256)"],
  [{ content_type: false }, "content_type must be a string (got a JSON boolean)"],
  [{ headers: ["a"] }, "headers must be a JSON object of strings (got a JSON array)"],
  [{ headers: { n: 1 } }, "headers[n] must be a string (got a JSON number)"],
  [{ headers: { big: "v".repeat(8190) } }, "headers[big] must be at most 8192 bytes (got 8193)"],
  [
    { headers: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`h${i}`, "v"])) },
    "headers must have 0 to 64 entries (got 65)",
  ],
];

for (const engine of engines) {
  describe.skipIf(!engine.available())(`enqueue from SQL refuses bad input on ${engine.name}`, () => {
    let db: Db;
    let close: () => Promise<void>;
    const sql = <R extends object = Record<string, unknown>>(text: string, params: unknown[] = []) =>
      db.query<R>({ name: "", text }, params);
    const refusal = (p: Promise<unknown>) =>
      p.then(
        () => ({ code: "none", message: "it was accepted" }),
        (e: { code?: string; message?: string }) => ({ code: e.code, message: e.message }),
      );
    /** Nothing of the queues "bad" and "good" was written: no job, no known queue. */
    const nothingWritten = async () => {
      expect(await sql("select id from taskq.jobs where queue in ('bad', 'good')")).toEqual([]);
      expect(await sql("select name from taskq.known_queues where name in ('bad', 'good')")).toEqual([]);
    };

    beforeAll(async () => {
      ({ db, close } = await engine.open());
    });
    afterAll(() => close());

    it("names each bad option of taskq.enqueue as options.<name>", async () => {
      for (const [options, message] of badOptions) {
        for (const payload of ["'{}'::jsonb", "'\\x01'::bytea"]) {
          expect(
            await refusal(sql(`select taskq.enqueue('bad', ${payload}, $1)`, [options])),
            message,
          ).toEqual({
            code: "22023",
            message: `options.${message}`,
          });
        }
      }
      await nothingWritten();
    });

    it("names each bad option of a batch's job as jobs[i].<name>; the jobs before it are not written", async () => {
      for (const [options, message] of badOptions) {
        const jobs = [{ queue: "good" }, { queue: "bad", ...options }];
        expect(
          await refusal(sql("select * from taskq.enqueue_batch($1)", [JSON.stringify(jobs)])),
          message,
        ).toEqual({
          code: "22023",
          message: `jobs[1].${message}`,
        });
      }
      await nothingWritten();
    });

    it("refuses a key that is no option, options that are no object, a bad queue name and a null payload", async () => {
      const nameRule = "must be 1 to 128 letters or digits or . _ - and start with a letter or digit";
      const cases: [string, unknown[], string][] = [
        [
          `select taskq.enqueue('bad', '{}'::jsonb, '{"priorty": 1}')`,
          [],
          "options.priorty is not an option (they are content_type, delay_ms, flow_key, headers, idempotency_key, max_attempts, priority, run_at, ttl_seconds)",
        ],
        [
          `select taskq.enqueue('bad', '{}'::jsonb, '{"queue": "good"}')`,
          [],
          "options.queue is not an option",
        ],
        [
          `select taskq.enqueue('bad', '{}'::jsonb, '[1]')`,
          [],
          "options must be a JSON object (got a JSON array)",
        ],
        [
          `select taskq.enqueue('bad', '{}'::jsonb, '"x"')`,
          [],
          "options must be a JSON object (got a JSON string)",
        ],
        [`select taskq.enqueue('', '{}'::jsonb)`, [], `queue ${nameRule}`],
        [`select taskq.enqueue('bad queue', '{}'::jsonb)`, [], `queue ${nameRule}`],
        [`select taskq.enqueue('flow:x', '{}'::jsonb)`, [], `queue ${nameRule}`],
        [`select taskq.enqueue($1, '{}'::jsonb)`, ["q".repeat(129)], `queue ${nameRule}`],
        [`select taskq.enqueue(null, '{}'::jsonb)`, [], `queue ${nameRule}`],
        [`select taskq.enqueue('bad', null::jsonb)`, [], "payload must not be null"],
        [`select taskq.enqueue('bad', null::bytea)`, [], "payload must not be null"],
        [
          `select taskq.enqueue('bad', $1::bytea)`,
          [Buffer.alloc(1024 * 1024 + 1)],
          "payload must be at most 1048576 bytes (got 1048577)",
        ],
      ];
      for (const [text, params, message] of cases) {
        const got = await refusal(sql(text, params));
        // The message starts with the field and its rule.
        expect({ code: got.code, message: got.message?.slice(0, message.length) }, text).toEqual({
          code: "22023",
          message,
        });
      }
      await nothingWritten();
    });

    it("refuses a batch that is no array of 1 to 1000 job objects, naming the entry and field", async () => {
      const nameRule = "must be 1 to 128 letters or digits or . _ - and start with a letter or digit";
      const cases: [unknown, string][] = [
        [{ queue: "bad" }, "jobs must be a JSON array (got a JSON object)"],
        [[], "jobs must have 1 to 1000 entries (got 0)"],
        [
          Array.from({ length: 1001 }, () => ({ queue: "bad" })),
          "jobs must have 1 to 1000 entries (got 1001)",
        ],
        [[{ queue: "good" }, "bad"], "jobs[1] must be a JSON object (got a JSON string)"],
        [[{ queue: "good" }, {}], `jobs[1].queue ${nameRule}`],
        [[{ queue: "good" }, { queue: 5 }], `jobs[1].queue ${nameRule}`],
        [[{ queue: "good" }, { queue: "bad queue" }], `jobs[1].queue ${nameRule}`],
        [[{ queue: "good" }, { queue: "q".repeat(129) }], `jobs[1].queue ${nameRule}`],
        [[{ queue: "good" }, { queue: "qé" }], `jobs[1].queue ${nameRule}`],
        [
          [{ queue: "good" }, { queue: "bad", payload: {}, payload_base64: "AA==" }],
          "jobs[1].payload_base64 must not be given with payload (give one or neither)",
        ],
        [
          [{ queue: "good" }, { queue: "bad", payload_base64: "AAA" }],
          "jobs[1].payload_base64 must be a string of standard base64, padded with =",
        ],
        [
          [{ queue: "good" }, { queue: "bad", payload_base64: "A_-A" }],
          "jobs[1].payload_base64 must be a string of standard base64, padded with =",
        ],
        [
          [{ queue: "good" }, { queue: "bad", payload_base64: 12 }],
          "jobs[1].payload_base64 must be a string of standard base64, padded with =",
        ],
        [
          [{ queue: "good" }, { queue: "bad", prority: 1 }],
          "jobs[1].prority is not a job field (they are queue, payload, payload_base64, content_type, delay_ms, flow_key, headers, idempotency_key, max_attempts, priority, run_at, ttl_seconds)",
        ],
        [
          [
            { queue: "good" },
            { queue: "bad", payload_base64: Buffer.alloc(1024 * 1024 + 1).toString("base64") },
          ],
          "jobs[1].payload must be at most 1048576 bytes (got 1048577)",
        ],
      ];
      for (const [jobs, message] of cases) {
        expect(
          await refusal(sql("select * from taskq.enqueue_batch($1)", [JSON.stringify(jobs)])),
          message,
        ).toEqual({
          code: "22023",
          message,
        });
      }
      expect(await refusal(sql("select * from taskq.enqueue_batch(null)"))).toEqual({
        code: "22023",
        message: "jobs must be a JSON array (got null)",
      });
      await nothingWritten();
    });

    it("takes a queue name of 128 characters, the longest there is, alone and in a batch", async () => {
      const name = `q${"-".repeat(127)}`;
      const [one] = await sql<{ id: string }>("select taskq.enqueue($1, '{}'::jsonb) as id", [name]);
      const batch = await sql<{ id: string }>("select id from taskq.enqueue_batch($1)", [
        JSON.stringify([{ queue: name }]),
      ]);
      const queued = await sql<{ id: string }>("select id from taskq.jobs where queue = $1 order by id", [
        name,
      ]);
      expect(queued.map((j) => String(j.id))).toEqual([String(one?.id), String(batch[0]?.id)]);
    });
  });
}

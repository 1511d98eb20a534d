// Array parameters as this gateway writes them (arrayLiteral) reach Postgres as the same arrays that
// node-postgres writes from the JS arrays itself.
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { haveService, testServices } from "../testing/services.js";
import { arrayLiteral } from "./array-literal.js";

const tricky = [
  "plain",
  "",
  "NULL",
  "null",
  'with "quotes"',
  "back\\slash",
  "\\\\x00",
  "comma, and {braces}",
  "  spaced  ",
  "tab\tand\nnewline",
  "ünïcødé ✓",
  "123",
  "-1",
  "007",
  null,
];

describe("arrayLiteral", () => {
  it("leaves arrays it does not write to node-postgres", () => {
    expect(arrayLiteral([[1, 2]])).toBeUndefined();
    expect(arrayLiteral([new Date(0)])).toBeUndefined();
    expect(arrayLiteral([{ a: 1 }])).toBeUndefined();
    expect(arrayLiteral([])).toBe("{}");
  });

  it("writes digits bare and quotes the rest", () => {
    expect(arrayLiteral(["12", 3, null, "a b", 'q"'])).toBe('{12,3,NULL,"a b","q\\""}');
  });
});

describe.runIf(haveService("postgres"))("arrayLiteral on Postgres", () => {
  let client: pg.Client;
  beforeAll(async () => {
    client = new pg.Client({ connectionString: testServices.postgresUrl });
    await client.connect();
  });
  afterAll(() => client?.end());

  /** The array Postgres reads from `values`, written by node-postgres and by arrayLiteral. */
  async function both(type: string, values: unknown[]) {
    const sql = `select $1::${type} as v`;
    const byPg = (await client.query(sql, [values])).rows[0].v;
    const ours = (await client.query(sql, [arrayLiteral(values)])).rows[0].v;
    return { byPg, ours };
  }

  it.each([
    ["text[]", tricky],
    ["bigint[]", ["1", "9223372036854775807", null, "42"]],
    ["integer[]", [0, -5, 2147483647, null]],
    ["float8[]", [1.5, -0.25, 1e21, null]],
    ["boolean[]", [true, false, null]],
    ["bytea[]", [Buffer.from([0, 1, 255]), new Uint8Array([92, 34, 44]), Buffer.alloc(0), null]],
    ["jsonb[]", ['{"type":"E","message":"a \\"quoted\\" \\\\ path, {x}"}', null, "[]"]],
  ])("%s: the same array either way", async (type, values) => {
    const { byPg, ours } = await both(type, values);
    expect(ours).toEqual(byPg);
    expect(ours).toHaveLength(values.length);
  });

  it("a subarray of bytes is written as its own bytes", async () => {
    const whole = Buffer.from([1, 2, 3, 4, 5]);
    const { ours } = await both("bytea[]", [whole.subarray(1, 3)]);
    expect(ours).toEqual([Buffer.from([2, 3])]);
  });
});

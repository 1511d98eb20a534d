import type http from "node:http";
import { InvalidArgumentError } from "./errors.js";

const MAX_BODY = 64 * 1024;

/** A body that is not a JSON object of at most MAX_BODY bytes (400). */
export class BadJson extends Error {}

/** Reads a REST request's body as a JSON object. */
export async function readJson(req: http.IncomingMessage): Promise<Record<string, unknown>> {
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY) throw new BadJson(`body must be at most ${MAX_BODY} bytes`);
    chunks.push(chunk as Buffer);
  }
  let body: unknown;
  try {
    body = JSON.parse(Buffer.concat(chunks).toString("utf8") || "null");
  } catch {
    throw new BadJson("body must be JSON");
  }
  if (typeof body !== "object" || body === null || Array.isArray(body))
    throw new BadJson("body must be a JSON object");
  return body as Record<string, unknown>;
}

/**
 * The whole number a body gives for `field`; `rule` says what is expected ("a whole number from 1 to
 * 1000000"). A value of another JSON type is refused naming the type it has, so `{"limit": "10"}`
 * hears that 10 goes without quotes rather than that the limit is missing.
 */
export function wholeNumber(value: unknown, field: string, rule: string): number {
  if (typeof value === "number" && Number.isInteger(value)) return value;
  if (value === undefined) throw new InvalidArgumentError(field, `is required (${rule})`);
  if (typeof value === "string") {
    const unquote = /^\s*-?\d+(\.\d+)?\s*$/.test(value) ? `: send ${value.trim()} without quotes` : "";
    throw new InvalidArgumentError(
      field,
      `must be a number, not a string (got ${JSON.stringify(value)})${unquote}`,
    );
  }
  if (typeof value === "number") throw new InvalidArgumentError(field, `must be ${rule} (got ${value})`);
  throw new InvalidArgumentError(field, `must be ${rule}, not ${jsonType(value)}`);
}

/** The JSON type of a parsed value, in words. */
function jsonType(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createTransport } from "@taskq/sdk";
import { AdminService } from "@taskq/sdk/proto";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hashToken, newToken } from "../auth/tokens.js";
import { grpcStubs, unary } from "../testing/grpc-stubs.js";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";
import { encodeGrpcMessage } from "./grpc-message.js";

describe("encodeGrpcMessage", () => {
  it("keeps punctuation readable and escapes only %, controls and non-ASCII", () => {
    expect(encodeGrpcMessage("header authorization: Bearer <token>; a/b, c=d?")).toBe(
      "header authorization: Bearer <token>; a/b, c=d?",
    );
    expect(encodeGrpcMessage("50% é\n")).toBe("50%25 %C3%A9%0A");
    expect(encodeGrpcMessage(" padded ")).toBe("%20padded%20");
  });

  it("decodes back to the same text with decodeURI (grpc-js) and decodeURIComponent (connect-es)", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme" }), (text) => {
        const wire = encodeGrpcMessage(text);
        expect(wire).toMatch(/^[\x20-\x7e]*$/);
        expect(decodeURI(wire)).toBe(text);
        expect(decodeURIComponent(wire)).toBe(text);
      }),
    );
  });
});

describe("status messages through a plain grpc-js client", () => {
  const worker = newToken();
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({
      config: { tokens: [{ name: "w1", roles: ["worker"], queues: null, sha256: hashToken(worker) }] },
    });
  });
  afterAll(() => gw?.stop());

  /** The status details a grpc-js stub sees for `method` on AdminService. */
  const details = async (token: string | undefined, method: string, req: object) => {
    const stubs = grpcStubs(gw.grpcUrl, token);
    try {
      await unary(stubs.admin, method, req);
      throw new Error(`${method} succeeded`);
    } catch (err) {
      return (err as { details: string }).details;
    } finally {
      stubs.close();
    }
  };

  it("reads the gateway's exact text, punctuation included", async () => {
    expect(await details(undefined, "PauseQueue", { queue: "mail" })).toBe(
      "missing bearer token (header authorization: Bearer <token>)",
    );
    expect(await details(worker, "PauseQueue", { queue: "mail" })).toBe(
      "token w1 (worker) may not call AdminService.PauseQueue: it needs operator",
    );
  });

  it("reads the same text as a connect-es client", async () => {
    const admin = createClient(AdminService, createTransport({ baseUrl: gw.grpcUrl, token: worker }));
    const err = await admin.pauseQueue({ queue: "mail" }).catch((e: unknown) => ConnectError.from(e));
    expect(err).toMatchObject({ code: Code.PermissionDenied });
    expect((err as ConnectError).rawMessage).toBe(await details(worker, "PauseQueue", { queue: "mail" }));
  });
});

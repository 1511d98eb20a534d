import { createClient } from "@connectrpc/connect";
import { createTransport } from "@taskq/sdk";
import { AdminService } from "@taskq/sdk/proto";
import { describe, expect, it } from "vitest";
import { startTestGateway } from "../testing/test-gateway.js";
import { hashToken, newToken } from "./tokens.js";

describe("AdminService.WhoAmI", () => {
  it("names the token, its roles and its queue scope", async () => {
    const secret = newToken();
    const gw = await startTestGateway({
      config: {
        tokens: [
          { name: "mail-both", roles: ["worker", "producer"], queues: ["mail"], sha256: hashToken(secret) },
        ],
      },
    });
    try {
      const admin = createClient(AdminService, createTransport({ baseUrl: gw.grpcUrl, token: secret }));
      const me = await admin.whoAmI({});
      expect({ actor: me.actor, roles: me.roles, queues: me.queues, open: me.open }).toEqual({
        actor: "mail-both",
        roles: ["worker", "producer"],
        queues: ["mail"],
        open: false,
      });
    } finally {
      await gw.stop();
    }
  });

  it("says an open gateway is open, over Connect JSON without a token", async () => {
    const gw = await startTestGateway();
    try {
      const res = await fetch(`${gw.httpUrl}/taskq.v1.AdminService/WhoAmI`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: "{}",
      });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ actor: "anonymous", open: true });
    } finally {
      await gw.stop();
    }
  });
});

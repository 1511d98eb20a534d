import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Config } from "../config.js";
import { type Cluster, startCluster } from "../testing/cluster-harness.js";
import { haveService } from "../testing/services.js";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";

// Config throttles belong to the newest config version: an instance started with an older or
// different file changes nothing, and says so on /readyz and a metric.
describe.skipIf(!haveService("postgres") || !haveService("redis"))(
  "config throttles across gateway instances with different files",
  () => {
    const q = `cfg-${Date.now()}`;
    const fleetConfig = (version: number, queues: Config["queues"]): Partial<Config> => ({
      configVersion: version,
      queues,
    });
    let c: Cluster;
    const extra: TestGateway[] = [];
    beforeAll(async () => {
      c = await startCluster({
        config: fleetConfig(2, { [q]: { throttle: { limit: 5, period_ms: 1000 } } }),
      });
    });
    afterAll(async () => {
      for (const g of extra) await g.stop();
      await c?.stop();
    });
    const start = async (config: Partial<Config>) => {
      const g = await startTestGateway({ databaseUrl: c.gateways[0]?.databaseUrl ?? "", config });
      extra.push(g);
      return g;
    };
    const throttle = async () => (await c.admins[1]?.getQueue({ queue: q }))?.queue?.throttle;
    const readyz = async (g: TestGateway) => (await fetch(`${g.httpUrl}/readyz`)).text();
    const disagreement = async (g: TestGateway) =>
      (await fetch(`${g.httpUrl}/metrics`).then((r) => r.text()))
        .split("\n")
        .find((l) => l.startsWith("taskq_config_disagreement "));

    it("the three instances with one file agree", async () => {
      expect(await throttle()).toMatchObject({ limit: 5, periodMs: 1000 });
      for (const g of c.gateways) expect(await readyz(g)).toBe("ready\ntransport: plaintext-loopback\n");
    });

    it("an instance started with an older file (without the queue) neither removes nor changes the throttle", async () => {
      const old = await start(fleetConfig(1, {}));
      expect(await throttle()).toMatchObject({ limit: 5, periodMs: 1000 });
      expect(await readyz(old)).toMatch(/^ready\nconfig: .*version 1.*fleet's \(version 2/);
      expect(await disagreement(old)).toBe("taskq_config_disagreement 1");
      expect(await disagreement(c.gateways[0] as TestGateway)).toBe("taskq_config_disagreement 0");
      const audit = await c.admins[0]?.listQueueAudit({ queue: q });
      // Newest first: the throttle, after the config created the queue.
      expect(audit?.entries.map((e) => e.eventType)).toEqual(["queue.throttle", "queue.ensure"]);
    });

    it("an instance with the same version but a different file changes nothing either", async () => {
      const other = await start(fleetConfig(2, { [q]: { throttle: { limit: 9, period_ms: 1000 } } }));
      expect(await throttle()).toMatchObject({ limit: 5, periodMs: 1000 });
      expect(await disagreement(other)).toBe("taskq_config_disagreement 1");
    });

    it("a newer file replaces the fleet's config throttles, removing those it dropped", async () => {
      const newer = await start(fleetConfig(3, {}));
      expect(await readyz(newer)).toBe("ready\ntransport: plaintext-loopback\n");
      expect(await throttle()).toBeUndefined();
      const audit = await c.admins[0]?.listQueueAudit({ queue: q });
      expect(audit?.entries[0]).toMatchObject({ eventType: "queue.unthrottle", actor: "config" });
    });
  },
);

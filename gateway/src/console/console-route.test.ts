import { mkdtempSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";
import { consoleRoute } from "./console-route.js";

describe("the console route on a gateway run from sources", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway();
  });
  afterAll(() => gw?.stop());

  it("redirects / and /console to /console/", async () => {
    for (const path of ["/", "/console"]) {
      const res = await fetch(`${gw.httpUrl}${path}`, { redirect: "manual" });
      expect([path, res.status, res.headers.get("location")]).toEqual([path, 302, "/console/"]);
    }
  });

  it("serves the page with a policy that allows only its own origin", async () => {
    const res = await fetch(`${gw.httpUrl}/console/`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(res.headers.get("content-security-policy")).toContain("default-src 'self'");
    expect(await res.text()).toContain('<script type="module" src="main.js">');
  });

  it("serves the icon the page links to at /favicon.ico, where browsers look unasked", async () => {
    const page = await (await fetch(`${gw.httpUrl}/console/`)).text();
    expect(page).toContain('<link rel="icon" type="image/svg+xml" href="/favicon.ico" />');
    const res = await fetch(`${gw.httpUrl}/favicon.ico`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/svg+xml");
    expect(await res.text()).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"[\s\S]*<\/svg>\n$/);
  });

  it("serves each browser module as JavaScript transpiled from its TypeScript", async () => {
    const res = await fetch(`${gw.httpUrl}/console/queues-model.js`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    const js = await res.text();
    expect(js).toContain("export function mergeQueues(settings, health, counters)");
    expect(js).not.toContain("interface");
  });

  it("serves nothing else: tests, config, unknown names, other methods", async () => {
    const status = async (path: string, method = "GET") =>
      (await fetch(`${gw.httpUrl}${path}`, { method })).status;
    expect(await status("/console/queues-model.test.js")).toBe(404);
    expect(await status("/console/tsconfig.json")).toBe(404);
    expect(await status("/console/nope.js")).toBe(404);
    expect(await status("/console/%2e%2e%2fserver.ts")).toBe(404);
    expect(await status("/console/", "POST")).toBe(405);
  });
});

describe("the console route on a built gateway", () => {
  let server: http.Server;
  let base: string;
  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), "taskq-console-"));
    writeFileSync(join(dir, "app.js"), "export const built = true;\n");
    writeFileSync(join(dir, "app.ts"), "export const built: boolean = false;\n");
    const route = consoleRoute(pathToFileURL(`${dir}/`));
    server = http.createServer((req, res) => {
      if (!route(req, res)) res.writeHead(418).end();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it("prefers the built JavaScript to its source", async () => {
    expect(await (await fetch(`${base}/console/app.js`)).text()).toBe("export const built = true;\n");
  });

  it("leaves other paths to the next route", async () => {
    expect((await fetch(`${base}/healthz`)).status).toBe(418);
  });
});

#!/usr/bin/env node
// The container's HEALTHCHECK: exits 0 when the gateway on this host answers 200 on the given path
// (default /readyz) of its HTTP port (TASKQ_HTTP_PORT, default 7071), over HTTPS or plain HTTP,
// whichever it serves. It checks readiness, not identity: the certificate is not verified (it is the
// gateway's own, on loopback, and may be issued for a name other than 127.0.0.1).
import http from "node:http";
import https from "node:https";

const path = process.argv[2] ?? "/readyz";
const port = Number(process.env.TASKQ_HTTP_PORT || 7071);

function ok(get: typeof https.get, opts: https.RequestOptions): Promise<boolean> {
  return new Promise((resolve) => {
    const req = get({ host: "127.0.0.1", port, path, timeout: 2500, ...opts }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on("error", () => resolve(false));
    req.on("timeout", () => req.destroy());
  });
}

const ready = (await ok(https.get, { rejectUnauthorized: false })) || (await ok(http.get, {}));
process.exit(ready ? 0 : 1);

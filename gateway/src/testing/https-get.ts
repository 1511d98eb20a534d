import https from "node:https";

/** GET over HTTPS trusting only `ca` (and presenting a client certificate when given): status and body. */
export function httpsGet(
  url: string,
  ca: string,
  client?: { cert: string; key: string },
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    https
      .get(url, { ca, ...client }, (res) => {
        let body = "";
        res.setEncoding("utf8").on("data", (s: string) => {
          body += s;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      })
      .on("error", reject);
  });
}

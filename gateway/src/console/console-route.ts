import { readFile } from "node:fs/promises";
import type http from "node:http";

/** One file of the console, ready to send. */
interface Asset {
  readonly type: string;
  readonly body: Buffer;
}

/** The console is a flat directory: a name can never climb out of it, and test files are not served. */
const ASSET_NAME = /^[a-z][a-z0-9-]*\.(html|css|js)$/;
const TYPES: Record<string, string> = {
  html: "text/html; charset=utf-8",
  css: "text/css; charset=utf-8",
  js: "text/javascript; charset=utf-8",
};
/**
 * The console's icon, at /favicon.ico where browsers look for one unasked (an SVG: every current
 * browser takes it there when the page's link says so, and the rest get a 200 instead of a 404).
 */
const FAVICON = Buffer.from(
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#245"/>' +
    '<path d="M4 5h8M4 8h8M4 11h5" stroke="#fff" stroke-width="1.6"/></svg>\n',
);
// The console needs nothing but its own origin: no CDN, no inline script, no framing.
const SECURITY_HEADERS = {
  "content-security-policy":
    "default-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
};

/**
 * Serves the web console at /console/ (and redirects / there). In the built gateway the browser code
 * sits beside this file as JavaScript (`npm run build`); run from the TypeScript sources (`npm start`)
 * each `x.js` is transpiled from `x.ts` on first request and kept in memory, so neither needs a step
 * of its own. Returns false when the URL is not the console's.
 */
export function consoleRoute(webDir: URL = new URL("./web/", import.meta.url)) {
  const assets = new Map<string, Promise<Asset | null>>();
  const load = (name: string) => {
    let asset = assets.get(name);
    if (!asset) {
      asset = loadAsset(webDir, name);
      assets.set(name, asset);
      // A failure (not a missing file) is retried on the next request rather than remembered.
      asset.catch(() => assets.delete(name));
    }
    return asset;
  };
  return (req: http.IncomingMessage, res: http.ServerResponse): boolean => {
    const path = new URL(req.url ?? "/", "http://localhost").pathname;
    if (path === "/" || path === "/console") {
      res.writeHead(302, { location: "/console/" }).end();
      return true;
    }
    if (path === "/favicon.ico" && (req.method === "GET" || req.method === "HEAD")) {
      res.writeHead(200, {
        "content-type": "image/svg+xml",
        "content-length": FAVICON.length,
        "cache-control": "max-age=86400",
        "x-content-type-options": "nosniff",
      });
      res.end(req.method === "HEAD" ? undefined : FAVICON);
      return true;
    }
    if (!path.startsWith("/console/")) return false;
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { allow: "GET, HEAD", "content-type": "text/plain" }).end("method not allowed\n");
      return true;
    }
    const name = path.slice("/console/".length) || "index.html";
    if (!ASSET_NAME.test(name)) {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
      return true;
    }
    load(name).then(
      (asset) => {
        if (!asset) return void res.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
        res.writeHead(200, {
          "content-type": asset.type,
          "content-length": asset.body.length,
          // Small files: always revalidate, so a gateway upgrade never runs a stale console.
          "cache-control": "no-cache",
          ...SECURITY_HEADERS,
        });
        res.end(req.method === "HEAD" ? undefined : asset.body);
      },
      (err: Error) =>
        res.writeHead(500, { "content-type": "text/plain" }).end(`console asset ${name}: ${err.message}\n`),
    );
    return true;
  };
}

async function loadAsset(webDir: URL, name: string): Promise<Asset | null> {
  const ext = name.slice(name.lastIndexOf(".") + 1);
  const type = TYPES[ext] ?? "application/octet-stream";
  const built = await readIfExists(new URL(name, webDir));
  if (built) return { type, body: built };
  if (ext !== "js") return null;
  const source = await readIfExists(new URL(name.replace(/\.js$/, ".ts"), webDir));
  if (!source) return null;
  return { type, body: Buffer.from(await transpile(source.toString("utf8"), name)) };
}

async function readIfExists(file: URL): Promise<Buffer | null> {
  try {
    return await readFile(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw err;
  }
}

/** Strips types from one browser module; TypeScript is a dev dependency, present wherever sources run. */
async function transpile(source: string, fileName: string): Promise<string> {
  let ts: typeof import("typescript");
  try {
    ts = (await import("typescript")).default;
  } catch {
    throw new Error("not built and TypeScript is not installed: run `npm run build`");
  }
  return ts.transpileModule(source, {
    fileName: fileName.replace(/\.js$/, ".ts"),
    compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext },
  }).outputText;
}

#!/usr/bin/env node
// The `taskq` command. In a source checkout (src/ beside this file and the workspace's tsx installed)
// it runs the TypeScript sources in this process, so `npx taskq` works right after `npm ci`, with no
// build and never a stale one; an installed package runs its build (dist/).
import { existsSync } from "node:fs";
import { register } from "node:module";
import { fileURLToPath } from "node:url";

const source = new URL("../src/cli.ts", import.meta.url);

/** tsx's in-process loader, when the workspace has it (a dev dependency: a checkout only). */
function tsxApi() {
  try {
    return import.meta.resolve("tsx/esm/api");
  } catch {
    return undefined;
  }
}

const tsx = existsSync(fileURLToPath(source)) ? tsxApi() : undefined;
if (tsx) {
  (await import(tsx)).register();
  // Workspace packages (@taskq/sdk) resolve to their sources, as `--conditions=taskq-source` does.
  register("./source-condition.mjs", import.meta.url);
  await import(source.href);
} else {
  await import(new URL("../dist/cli.js", import.meta.url).href);
}

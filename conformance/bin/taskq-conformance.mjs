#!/usr/bin/env node
// Runs the built CLI (dist/) when there is one; in a source checkout without a build, runs the
// TypeScript sources through tsx with the taskq-source condition, in a child Node.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const built = new URL("../dist/cli.js", import.meta.url);
if (existsSync(fileURLToPath(built))) {
  await import(built.href);
} else {
  const source = fileURLToPath(new URL("../src/cli.ts", import.meta.url));
  const args = ["--conditions=taskq-source", "--import", "tsx", source, ...process.argv.slice(2)];
  const child = spawnSync(process.execPath, args, { stdio: "inherit" });
  process.exitCode = child.status ?? 1;
}

// vitest's global setup (vitest.config.ts): once per run, before the test workers start, it looks for
// Postgres and Redis on their default local ports when their URLs are not set, prints one banner, and
// hands what it found to the workers, whose skip messages then carry the command that runs the skipped
// tests on them (services.ts). It never sets a URL itself.
import type { TestProject } from "vitest/node";
import { findLocalServices, LOCAL_SERVICES_KEY } from "./local-services.js";

export default async function setup(project: TestProject): Promise<void> {
  const { found, banner } = await findLocalServices();
  if (banner) console.warn(banner);
  project.provide(LOCAL_SERVICES_KEY, found);
}

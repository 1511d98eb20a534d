import { existsSync } from "node:fs";
import type { Locator } from "playwright-core";

/** Debian's Chromium, which the console's browser tests drive through playwright-core. */
export const CHROMIUM = "/usr/bin/chromium";

/** How long the page gets to show a change: a poll is 2 s, an action refreshes at once (generous: the
 * machine is shared, and a bound hit only costs time when the console is broken). */
export const soon = { timeout: 10_000, interval: 50 };

/** Where the browser tests leave their screenshots (each test file makes it in its beforeAll). */
export const ARTIFACTS = new URL("../../../test-artifacts/console/", import.meta.url);

/** Chromium is a CI prerequisite (.ci/run installs it): skipped loudly elsewhere, unless required. */
export function haveChromium(): boolean {
  if (existsSync(CHROMIUM)) return true;
  if (process.env.TASKQ_TEST_REQUIRE_SERVICES === "1")
    throw new Error(`${CHROMIUM} is missing but TASKQ_TEST_REQUIRE_SERVICES=1: apt-get install -y chromium`);
  console.warn(
    `\n*** SKIPPING the console browser tests: ${CHROMIUM} is missing (apt-get install chromium) ***\n`,
  );
  return false;
}

/** The element's text, trimmed; "" while it is not there. */
export async function text(locator: Locator): Promise<string> {
  return ((await locator.textContent({ timeout: 500 }).catch(() => "")) ?? "").trim();
}

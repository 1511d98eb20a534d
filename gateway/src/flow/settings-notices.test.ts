import { describe, expect, it } from "vitest";
import { SettingsNotices } from "./settings-notices.js";

describe("SettingsNotices", () => {
  it("a wait ends when a notification of that queue beyond the count taken arrives", async () => {
    const n = new SettingsNotices();
    n.notified("mail");
    const seen = n.seen("mail");
    let arrived: boolean | undefined;
    const wait = n.waitPast("mail", seen, 5000).then((a) => {
      arrived = a;
    });
    n.notified("other");
    await new Promise((r) => setTimeout(r, 10));
    expect(arrived).toBeUndefined();
    n.notified("mail");
    await wait;
    expect(arrived).toBe(true);
  });

  it("a notification that came before the wait started counts", async () => {
    const n = new SettingsNotices();
    const seen = n.seen("mail");
    n.notified("mail");
    expect(await n.waitPast("mail", seen, 5000)).toBe(true);
  });

  it("gives up after the timeout, so a lost LISTEN connection cannot hang a verb", async () => {
    const n = new SettingsNotices();
    const started = performance.now();
    expect(await n.waitPast("mail", n.seen("mail"), 50)).toBe(false);
    expect(performance.now() - started).toBeGreaterThanOrEqual(45);
  });
});

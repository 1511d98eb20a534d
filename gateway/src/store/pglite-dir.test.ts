import { mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { pgliteDb } from "./db.js";

describe("pgliteDb", () => {
  it("creates the data directory's missing parents (a fresh clone has no .taskq)", async () => {
    const root = await mkdtemp(join(tmpdir(), "taskq-pglite-"));
    const dataDir = join(root, ".taskq", "data");
    try {
      const db = await pgliteDb(dataDir);
      try {
        expect(await db.query({ name: "one", text: "SELECT 1 AS one" })).toEqual([{ one: 1 }]);
      } finally {
        await db.close();
      }
      expect((await stat(dataDir)).isDirectory()).toBe(true);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});

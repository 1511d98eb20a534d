import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));

describe("npm ci at the repository's root", () => {
  // The bench's peers (graphile-worker wants Node 22.18) install apart, with `npm run bench:install`:
  // someone who only wants taskq sees no peer's engine warning on the Node the README names.
  it("installs nothing that refuses this Node (no EBADENGINE warning)", () => {
    const dry = spawnSync("npm", ["ci", "--dry-run", "--no-audit", "--no-fund"], {
      cwd: root,
      encoding: "utf8",
    });
    expect(dry.status, dry.stderr).toBe(0);
    expect(dry.stderr).not.toContain("EBADENGINE");
  });
});

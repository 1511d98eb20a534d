import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), "utf8");

/** The exec-form JSON array of a Dockerfile instruction. */
function execForm(dockerfile: string, instruction: string): string[] {
  const line = dockerfile.split("\n").find((l) => l.startsWith(`${instruction} `));
  if (!line) throw new Error(`Dockerfile has no ${instruction}`);
  return JSON.parse(line.slice(instruction.length + 1));
}

describe("Dockerfile", () => {
  const dockerfile = read("Dockerfile");

  it("starts the production entry point docs/operations.md documents", () => {
    const command = [...execForm(dockerfile, "ENTRYPOINT"), ...execForm(dockerfile, "CMD")].join(" ");
    expect(command).toBe("node gateway/dist/cli.js gateway");
    expect(read("docs/operations.md")).toContain(command);
  });

  it("builds that entry point and ships the SQL and Lua it reads at run time", () => {
    const pkg = JSON.parse(read("package.json")) as { scripts: Record<string, string> };
    expect(dockerfile).toContain("RUN npm run build");
    expect(pkg.scripts.build).toContain("copy-assets");
    expect(dockerfile).toContain("COPY --from=build /app/gateway/dist gateway/dist");
    // The build copies the contract into the conformance kit (conformance/scripts/copy-proto.mjs).
    expect(pkg.scripts.build).toContain("copy-proto");
    expect(dockerfile.split(/^FROM /m)[1]).toContain("COPY proto proto");
  });

  it("runs as a non-root user with a readiness healthcheck", () => {
    expect(dockerfile).toMatch(/^USER node$/m);
    expect(dockerfile).toMatch(/^HEALTHCHECK .*\n.*\/readyz/m);
    // The healthcheck script is built from gateway/src and reads HTTPS as well as HTTP.
    expect(dockerfile).toContain('CMD ["node", "gateway/dist/healthcheck.js", "/readyz"]');
    expect(read("gateway/src/healthcheck.ts")).toContain("https.get");
  });

  it("leaves plaintext on 0.0.0.0 to the operator: TLS files, or TASKQ_INSECURE_PLAINTEXT behind a TLS load balancer", () => {
    expect(dockerfile).not.toMatch(/^ENV .*TASKQ_INSECURE_PLAINTEXT/m);
    expect(dockerfile).toContain("TASKQ_TLS_CERT_FILE");
  });

  it("gives npm ci every workspace's package.json in both stages, so it matches the lockfile", () => {
    const pkg = JSON.parse(read("package.json")) as { workspaces: string[] };
    const stages = dockerfile.split(/^FROM /m).slice(1);
    expect(stages).toHaveLength(2);
    for (const stage of stages)
      for (const ws of pkg.workspaces) expect(stage).toContain(`COPY ${ws}/package.json ${ws}/`);
  });
});

import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { CONTRACT_VERSION, isOlderVersion } from "./version.js";

const read = (path: string) => readFileSync(new URL(path, import.meta.url), "utf8");
const pkg = (dir: string) =>
  JSON.parse(read(`../../${dir}/package.json`)) as { version: string; dependencies?: Record<string, string> };

describe("one version", () => {
  it("is shared by the SDK, the gateway, the conformance kit, the contract and the CHANGELOG", () => {
    for (const dir of ["sdk-ts", "gateway", "conformance"]) expect(pkg(dir).version).toBe(CONTRACT_VERSION);
    // Each package depends on exactly the SDK of its own version.
    expect(pkg("gateway").dependencies?.["@taskq/sdk"]).toBe(CONTRACT_VERSION);
    expect(pkg("conformance").dependencies?.["@taskq/sdk"]).toBe(CONTRACT_VERSION);
    expect(read("../../proto/README.md")).toContain(`Version ${CONTRACT_VERSION}.`);
    // Keep a Changelog: changes wait under [Unreleased] until a release names its version.
    const version = CONTRACT_VERSION.replaceAll(".", "\\.");
    expect(read("../../CHANGELOG.md")).toMatch(new RegExp(`^## \\[(Unreleased|${version})\\]`, "m"));
  });
});

describe("isOlderVersion", () => {
  it("compares major, minor and patch as numbers", () => {
    expect(isOlderVersion("0.1.0", "0.2.0")).toBe(true);
    expect(isOlderVersion("0.9.0", "0.10.0")).toBe(true);
    expect(isOlderVersion("1.0.0", "0.10.0")).toBe(false);
    expect(isOlderVersion("0.1.0", "0.1.0")).toBe(false);
    expect(isOlderVersion("0.1.1-rc.1", "0.1.0")).toBe(false);
  });

  it("calls nothing older that it cannot read", () => {
    expect(isOlderVersion("", "0.1.0")).toBe(false);
    expect(isOlderVersion("dev", "0.1.0")).toBe(false);
  });
});

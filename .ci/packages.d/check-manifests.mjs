// What each published package.json must say: a license, Node's engines, a files list, and in every
// exports object that names "types", "types" first (TypeScript and linters read conditions in order).
import { readFileSync } from "node:fs";

let failed = false;
const fail = (file, message) => {
  console.error(`${file}: ${message}`);
  failed = true;
};

function typesFirst(file, value, at) {
  if (value === null || typeof value !== "object") return;
  const keys = Object.keys(value);
  if (keys.includes("types") && keys[0] !== "types") fail(file, `exports${at}: "types" is not first`);
  for (const key of keys) typesFirst(file, value[key], `${at}["${key}"]`);
}

for (const dir of process.argv.slice(2)) {
  const file = `${dir}/package.json`;
  const pkg = JSON.parse(readFileSync(file, "utf8"));
  if (pkg.private) fail(file, "is private");
  if (!pkg.license) fail(file, "has no license");
  if (!pkg.engines?.node) fail(file, "has no engines.node");
  if (!Array.isArray(pkg.files)) fail(file, "has no files list");
  if (!pkg.exports) fail(file, "has no exports");
  typesFirst(file, pkg.exports, "");
}
process.exitCode = failed ? 1 : 0;

// dist/cjs holds CommonJS inside a "type": "module" package: this marker tells Node (and TypeScript,
// reading the .d.ts beside it) that the files under it are CommonJS.
import { writeFileSync } from "node:fs";

writeFileSync(new URL("../dist/cjs/package.json", import.meta.url), '{ "type": "commonjs" }\n');

// Writes the settings table of docs/configuration.md from the config schema: `npm run docs:config`.
import { readFileSync, writeFileSync } from "node:fs";
import { CONFIG_DOC, withConfigTable } from "./config-table.js";

const path = new URL(`../../${CONFIG_DOC}`, import.meta.url);
const before = readFileSync(path, "utf8");
const after = withConfigTable(before);
writeFileSync(path, after);
console.log(after === before ? `${CONFIG_DOC} is up to date` : `${CONFIG_DOC} updated`);

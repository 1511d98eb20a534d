// tsc compiles TypeScript only; the SQL and Lua files the gateway reads at run time, and the console's
// HTML and CSS, ship beside it.
import { cpSync, rmSync } from "node:fs";

// Each folder is copied afresh: a file removed from src/ must not stay in dist/ (a migration left
// there would be applied, and a sql/ file left there refused as missing from order.txt).
for (const dir of ["store/migrations", "store/sql", "store/queries", "limiter/lua"]) {
  const target = new URL(`../dist/${dir}/`, import.meta.url);
  rmSync(target, { recursive: true, force: true });
  cpSync(new URL(`../src/${dir}/`, import.meta.url), target, { recursive: true });
}

cpSync(new URL("../src/console/web/", import.meta.url), new URL("../dist/console/web/", import.meta.url), {
  recursive: true,
  filter: (src) => !/\.(ts|json)$/.test(src),
});

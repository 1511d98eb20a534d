// tsc compiles TypeScript only; the SQL and Lua files the gateway reads at run time, and the console's
// HTML and CSS, ship beside it.
import { cpSync } from "node:fs";

for (const dir of ["store/migrations", "store/sql", "store/queries", "limiter/lua"]) {
  cpSync(new URL(`../src/${dir}/`, import.meta.url), new URL(`../dist/${dir}/`, import.meta.url), {
    recursive: true,
  });
}

cpSync(new URL("../src/console/web/", import.meta.url), new URL("../dist/console/web/", import.meta.url), {
  recursive: true,
  filter: (src) => !/\.(ts|json)$/.test(src),
});

// tsc compiles TypeScript only; the store's .sql files ship beside the compiled code.
import { cpSync } from "node:fs";

for (const dir of ["migrations", "queries"]) {
  cpSync(
    new URL(`../src/store/${dir}/`, import.meta.url),
    new URL(`../dist/store/${dir}/`, import.meta.url),
    {
      recursive: true,
    },
  );
}

import { runOperator } from "../cli/main.js";

/** What an operator command printed, and its exit code. */
export interface OperatorRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a `taskq` operator command in process with `env` as its environment, capturing its output. */
export async function operatorRun(
  argv: readonly string[],
  env: Record<string, string>,
): Promise<OperatorRun> {
  let stdout = "";
  let stderr = "";
  const code = await runOperator([...argv], {
    stdout: { write: (t: string) => (stdout += t) },
    stderr: { write: (t: string) => (stderr += t) },
    env,
  });
  return { code, stdout, stderr };
}

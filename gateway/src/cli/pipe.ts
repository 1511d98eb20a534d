/**
 * A reader that stops early (`taskq job ls mail | head`) closes the pipe, and the next write fails with
 * EPIPE: an unhandled 'error' event, so a stack trace. Like any Unix tool, stop quietly instead: the
 * reader has what it wanted.
 */
export function exitQuietlyOnClosedPipe(stream: NodeJS.WriteStream): void {
  stream.on("error", (err: NodeJS.ErrnoException) => {
    if (err.code !== "EPIPE") throw err;
    process.exit(process.exitCode ?? 0);
  });
}

import { unwatchFile, watchFile } from "node:fs";

/**
 * Calls `changed` once after any of `paths` changes (content, replacement by rename, or a swapped
 * symlink as Kubernetes mounts secrets), `debounceMs` after the last change so a writer that replaces
 * a certificate and then its key is read once, both new. Stat polling rather than fs.watch: it follows
 * renames and symlinks on every platform. Returns the stop function.
 */
export function watchFiles(
  paths: readonly string[],
  changed: () => void,
  opts: { intervalMs: number; debounceMs: number },
): () => void {
  let timer: NodeJS.Timeout | undefined;
  const listener = () => {
    clearTimeout(timer);
    timer = setTimeout(changed, opts.debounceMs);
  };
  for (const p of paths) watchFile(p, { interval: opts.intervalMs, persistent: false }, listener);
  return () => {
    clearTimeout(timer);
    for (const p of paths) unwatchFile(p, listener);
  };
}

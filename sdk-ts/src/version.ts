/**
 * The contract version this SDK was built for. The SDK, the gateway, the conformance kit and the
 * `.proto` contract share one version number; a test keeps this constant equal to the packages'.
 */
export const CONTRACT_VERSION = "0.1.0";

/** The response header in which a gateway reports its version (gRPC and HTTP alike). */
export const VERSION_HEADER = "taskq-version";

/**
 * Whether version `a` is older than version `b`, both `major.minor.patch` (a pre-release or build
 * suffix is ignored). False when either does not parse: an unknown version is not called older.
 */
export function isOlderVersion(a: string, b: string): boolean {
  const pa = parse(a);
  const pb = parse(b);
  if (!pa || !pb) return false;
  for (let i = 0; i < 3; i++) {
    if (pa[i] !== pb[i]) return (pa[i] ?? 0) < (pb[i] ?? 0);
  }
  return false;
}

function parse(v: string): number[] | undefined {
  const m = /^v?(\d+)\.(\d+)\.(\d+)/.exec(v.trim());
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : undefined;
}

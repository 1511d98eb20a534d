import type { Interceptor } from "@connectrpc/connect";
import type { Logger } from "./logger.js";
import { CONTRACT_VERSION, isOlderVersion, VERSION_HEADER } from "./version.js";

// One warning per gateway address and version in a process: a Client and a Worker on the same
// gateway, or a worker's reconnects, do not repeat it.
const warned = new Set<string>();

/**
 * Reads the gateway's version from the first response of this transport and warns, once, when it is
 * older than the contract this SDK was built for: calls it does not know may then fail as UNIMPLEMENTED,
 * or fields it does not know be ignored.
 */
export function versionCheck(baseUrl: string, logger: Logger): Interceptor {
  let checked = false;
  return (next) => async (req) => {
    const res = await next(req);
    if (!checked) {
      checked = true;
      const gateway = res.header.get(VERSION_HEADER);
      const key = `${baseUrl} ${gateway}`;
      if (gateway && isOlderVersion(gateway, CONTRACT_VERSION) && !warned.has(key)) {
        warned.add(key);
        logger.warn(
          { gatewayVersion: gateway, contractVersion: CONTRACT_VERSION, baseUrl },
          `taskq: the gateway at ${baseUrl} is version ${gateway}, older than the contract ${CONTRACT_VERSION} this SDK was built for; upgrade the gateway, or use an SDK of its version`,
        );
      }
    }
    return res;
  };
}

import type { PeerFactory } from "./adapter.js";
import { bullmqPeer } from "./bullmq.js";
import { graphileWorkerLocalQueuePeer, graphileWorkerPeer } from "./graphile-worker.js";
import { pgBossPeer } from "./pg-boss.js";

export type { DrainResult, PeerAdapter, PeerContext, PeerFactory } from "./adapter.js";

/**
 * Every system the drain scenario runs, in order. The taskq adapter (`./taskq.js`, exporting
 * `taskqPeer` with name "taskq") joins this list when the gateway and SDK exist.
 */
export const peers: readonly PeerFactory[] = [
  graphileWorkerPeer,
  graphileWorkerLocalQueuePeer,
  bullmqPeer,
  pgBossPeer,
];

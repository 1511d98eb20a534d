import type { PeerFactory } from "./adapter.js";
import { bullmqPeer } from "./bullmq.js";
import {
  graphileWorkerLocalQueuePeer,
  graphileWorkerLocalQueueSmallPeer,
  graphileWorkerPeer,
} from "./graphile-worker.js";
import { pgBossPeer } from "./pg-boss.js";
import { taskqPeer, taskqPrefetchPeer } from "./taskq.js";

export type { DrainResult, PeerAdapter, PeerContext, PeerFactory } from "./adapter.js";

/** Every system the drain scenario runs, in order; taskq first. */
export const peers: readonly PeerFactory[] = [
  taskqPeer,
  taskqPrefetchPeer,
  graphileWorkerPeer,
  graphileWorkerLocalQueuePeer,
  bullmqPeer,
  pgBossPeer,
];

/** Systems the drain scenario runs only when `--only` names them. */
export const optionalPeers: readonly PeerFactory[] = [graphileWorkerLocalQueueSmallPeer];

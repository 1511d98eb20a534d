import { setFlagsFromString } from "node:v8";

/**
 * Turns off V8's allocation-site pretenuring in this process: the `taskq` CLI's gateway owns its
 * process, so it may. Pretenuring makes V8 allocate, at a site whose objects once survived young
 * collections, straight into the old generation; every young object such an object points to then
 * survives each young collection until the next full one. In a gateway the sites of the Postgres
 * driver's results and the per-poll objects tipped over early, and from then on every row and every
 * poll's data was copied and promoted: much of what a drain allocated survived, scavenges grew long,
 * the old generation filled with garbage. Off (with the claim merger's map renewed instead of
 * cleared), little survives and scavenges stay short.
 * Embedders that call startGateway in a process of their own decide for themselves.
 */
export function keepShortLivedObjectsYoung(): void {
  setFlagsFromString("--no-allocation-site-pretenuring");
}

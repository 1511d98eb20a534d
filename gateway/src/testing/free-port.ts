import { once } from "node:events";
import { createServer } from "node:net";

/** A port nothing listens on right now on 127.0.0.1 (a gateway binds it a moment later). */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, "close");
  return port;
}

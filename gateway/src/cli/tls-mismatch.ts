import { isIP } from "node:net";
import tls from "node:tls";
import { Code, type ConnectError } from "@connectrpc/connect";

/**
 * One sentence for a call that failed because `--url`'s scheme does not match the gateway's port:
 * https:// at a plaintext port (OpenSSL's "wrong version number"), or http:// at a TLS port (the
 * gateway drops the connection, which the client reports as a cancelled stream). The second is
 * confirmed by a TLS handshake with the port, so another failure is never blamed on the scheme.
 * Null when the scheme is not the cause.
 */
export async function describeTlsMismatch(err: ConnectError, url: string): Promise<string | null> {
  const target = new URL(url);
  if (target.protocol === "https:" && plaintextAnswered(err)) {
    return `the gateway at ${url} does not speak TLS: use ${swapScheme(url, "http:")} (or enable TLS on the gateway)`;
  }
  if (target.protocol === "http:" && droppedCodes.has(err.code) && (await speaksTls(target))) {
    return `the gateway at ${url} speaks TLS: use ${swapScheme(url, "https:")} (with --ca-file when a private CA signed its certificate)`;
  }
  return null;
}

/** How a TLS port's refusal of a plaintext HTTP/2 client reaches it. */
const droppedCodes = new Set([Code.Canceled, Code.Unavailable, Code.Internal, Code.Unknown]);

/** A TLS client's first record read from a server that answered in plaintext. */
function plaintextAnswered(err: ConnectError): boolean {
  const cause = err.cause as { code?: unknown } | undefined;
  return cause?.code === "ERR_SSL_WRONG_VERSION_NUMBER" || /wrong version number/i.test(err.rawMessage);
}

function swapScheme(url: string, scheme: "http:" | "https:"): string {
  return url.replace(/^https?:/i, scheme);
}

/**
 * Whether the port answers a TLS handshake, certificate unchecked: only the protocol matters here. A
 * TLS alert (a gateway that wants a client certificate, say) counts as speaking TLS; a plaintext
 * answer (which OpenSSL reads as a malformed record), a refused connection or no answer within `ms`
 * does not.
 */
function speaksTls(target: URL, ms = 2000): Promise<boolean> {
  const host = target.hostname.replace(/^\[(.*)\]$/, "$1");
  return new Promise((resolve) => {
    const socket = tls.connect({
      host,
      port: Number(target.port || (target.protocol === "https:" ? 443 : 80)),
      servername: isIP(host) ? undefined : host,
      rejectUnauthorized: false,
      ALPNProtocols: ["h2"],
    });
    const done = (answer: boolean) => {
      socket.destroy();
      resolve(answer);
    };
    socket.once("secureConnect", () => done(true));
    socket.once("error", (e: NodeJS.ErrnoException) => done(/^ERR_SSL_.*ALERT/.test(e.code ?? "")));
    socket.setTimeout(ms, () => done(false));
  });
}

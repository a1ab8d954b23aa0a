// Names connection failures in a few words without an address or a credential, so they can go
// into errors and the health report (`connect ECONNREFUSED 10.0.0.5:6379` becomes
// `connection refused`).
import { createConnection } from 'node:net';

const TLS_CODE =
  /^(ERR_SSL_|ERR_TLS_|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_|CERT_|HOSTNAME_MISMATCH)/;

/** The address-free name of a connection failure. */
export function failureOf(err: Error & { code?: string }): string {
  const code = err.code ?? '';
  const message = err.message;
  if (/^(WRONGPASS|NOAUTH)/.test(message)) return 'authentication failed';
  // Before the codes: these wrap the last socket error of several tries in their message.
  if (/All sentinels are unreachable/.test(message)) return 'no Sentinel reachable';
  if (/^(Failed to refresh slots cache|None of startup nodes is available)/.test(message))
    return 'no Redis Cluster node reachable';
  if (TLS_CODE.test(code)) return `TLS handshake failed (${code})`;
  if (/certificate|SSL routines|wrong version number|TLS/i.test(message))
    return 'TLS handshake failed';
  if (code === 'ECONNREFUSED') return 'connection refused';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'host not found';
  if (code === 'ETIMEDOUT' || /timeout/i.test(message)) return 'connect timed out';
  if (code === 'ECONNRESET' || code === 'EPIPE') return 'connection reset';
  if (/^(LOADING|MASTERDOWN|BUSY)/.test(message))
    return `server not ready (${message.split(' ')[0]})`;
  return 'connection error';
}

/**
 * A TLS connection to a plain-text server times out rather than failing: Redis waits for the end
 * of a command line that the TLS ClientHello never sends. After such a timeout a plain TCP
 * connection to the same address tells the two cases apart: it connects (the server is there,
 * it just does not speak TLS) or it does not (the timeout was the network's).
 */
export async function tlsTimeoutReason(
  host: string,
  port: number,
  connectTimeoutMs: number,
): Promise<string> {
  const reachable = await new Promise<boolean>((resolve) => {
    const socket = createConnection({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(Math.min(connectTimeoutMs, 1000), () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
  return reachable
    ? `TLS handshake failed: the server accepted the connection but did not complete a TLS handshake within ${connectTimeoutMs} ms (a plain-text port? rediss:// needs a TLS port)`
    : 'connect timed out';
}

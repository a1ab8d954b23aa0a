// The health check's own connection to PostgreSQL: the `database` check asks "does the server
// answer?", and a pool saturated by slow statements must not answer "no". One connection, opened
// at the first probe and kept; dropped when it fails or a probe is abandoned (a hung server), and
// opened again by the next probe.
import pg from 'pg';
import { DatabaseUnavailableError } from '../../errors.js';

interface ProbeSettings {
  readonly url: string;
  readonly connectTimeoutMs: number;
  readonly applicationName: string;
  /** An address-free reason for a connection failure. */
  readonly reason: (err: unknown) => string;
}

export class ProbeConnection {
  #client: Promise<pg.Client> | undefined;
  #closed = false;

  constructor(private readonly settings: ProbeSettings) {}

  /** `SELECT 1` on the probe's connection; abandoned (and the connection dropped) when `signal` aborts. */
  async ping(signal?: AbortSignal): Promise<void> {
    if (this.#closed) throw new DatabaseUnavailableError('closed');
    const pending = (this.#client ??= this.#open());
    const drop = () => this.#drop(pending);
    signal?.addEventListener('abort', drop, { once: true });
    try {
      const client = await pending;
      await client.query('select 1');
    } catch (err) {
      drop();
      throw err instanceof DatabaseUnavailableError
        ? err
        : new DatabaseUnavailableError(this.settings.reason(err), { cause: err });
    } finally {
      signal?.removeEventListener('abort', drop);
    }
  }

  #open(): Promise<pg.Client> {
    const client = new pg.Client({
      connectionString: this.settings.url,
      connectionTimeoutMillis: this.settings.connectTimeoutMs,
      application_name: this.settings.applicationName,
    });
    // Its server going away (a restart) must neither end the process nor leave a dead connection.
    client.on('error', () => void this.#drop(opened));
    const opened = client.connect().then(() => client);
    opened.catch(() => void this.#drop(opened));
    return opened;
  }

  #drop(which: Promise<pg.Client>): void {
    if (this.#client !== which) return;
    this.#client = undefined;
    which
      .then(
        (client) => client.end(),
        () => undefined,
      )
      .catch(() => undefined);
  }

  async close(): Promise<void> {
    this.#closed = true;
    const client = this.#client;
    this.#client = undefined;
    await client
      ?.then(
        (c) => c.end(),
        () => undefined,
      )
      .catch(() => undefined);
  }
}

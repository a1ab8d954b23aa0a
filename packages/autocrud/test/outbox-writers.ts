// Writers for the outbox fleet tests (outbox-fleet.ts): they keep creating and PATCHing rows
// through whichever hosts are up, and remember what each answer told them, so the end of a test
// can hold every committed write to its delivery and ask the table about the unanswered ones.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ProcessHost } from '@kit/test-support/processes';

/** What the writers know of one row: the versions answered 2xx, and how many writes got no answer. */
interface RowLog {
  committed: number[];
  unknown: number;
}

/**
 * Writers that keep writing until stopped: each creates a row, PATCHes it `patches` times, then
 * creates the next; every request goes to the next live host in turn. A 2xx is a committed write
 * (its key@version is logged); a 503, a refused or reset connection or a timeout is "unknown" (the
 * write may or may not have committed: the table says); anything else fails the test.
 */
export class Writers {
  readonly rows = new Map<number, RowLog>();
  /** Names of rows whose create got no answer. */
  readonly unknownCreates: string[] = [];
  readonly failures: string[] = [];
  #stopped = false;
  #running: Promise<void>[] = [];
  #next = 0;
  answered = 0;
  unanswered = 0;

  constructor(
    private readonly live: () => readonly ProcessHost[],
    private readonly options: { writers: number; patches: number; pauseMs: number },
  ) {}

  start(): void {
    this.#running = Array.from({ length: this.options.writers }, (_, w) => this.#writer(w));
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await Promise.all(this.#running);
    assert.deepEqual(this.failures, [], 'every answer was a 2xx, a 503 or no answer');
  }

  get committed(): number {
    let n = 0;
    for (const row of this.rows.values()) n += row.committed.length;
    return n;
  }

  #host(): ProcessHost {
    const hosts = this.live();
    return hosts[this.#next++ % hosts.length] as ProcessHost;
  }

  async #send(
    method: 'POST' | 'PATCH',
    url: string,
    body: unknown,
  ): Promise<{ id: number; version: number } | 'unknown'> {
    const host = this.#host();
    try {
      const res = await fetch(`${host.base}${url}`, {
        method,
        headers: {
          'content-type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/json',
        },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(30_000),
      });
      const answer = (await res.json().catch(() => ({}))) as { id?: number; version?: number };
      // A 2xx whose body was cut off (the host died while sending it) told nothing: the table decides.
      if (res.ok && typeof answer.id === 'number' && typeof answer.version === 'number') {
        this.answered++;
        return { id: answer.id, version: answer.version };
      }
      if (!res.ok && res.status !== 503)
        this.failures.push(`${method} ${url}: ${res.status} ${JSON.stringify(answer)}`);
    } catch {
      // The host died with the request in flight, or was dead already.
    }
    this.unanswered++;
    return 'unknown';
  }

  async #writer(w: number): Promise<void> {
    for (let r = 0; !this.#stopped; r++) {
      const name = `w${w}-${r}`;
      const created = await this.#send('POST', '/api/counters', { name, value: 0 });
      if (created === 'unknown') {
        this.unknownCreates.push(name);
        continue;
      }
      const row: RowLog = { committed: [created.version], unknown: 0 };
      this.rows.set(created.id, row);
      for (let p = 1; p <= this.options.patches && !this.#stopped; p++) {
        await sleep(this.options.pauseMs);
        const patched = await this.#send('PATCH', `/api/counters/${created.id}`, { value: p });
        if (patched === 'unknown') row.unknown++;
        else row.committed.push(patched.version);
      }
      await sleep(this.options.pauseMs);
    }
  }
}

// @test-lines: once - heavy: PGlite directories shared by processes, once per CI run
// Several real service processes on one `pglite:<dir>`: PGlite is one process per directory, and
// two used to both start, both acknowledge writes, and leave a directory that no longer opened.
// The second is refused at start-up with KIT_ERR_AUTOCRUD_LOCKED naming the directory and the
// first's pid while the first writes under load, and nothing of the first is harmed; a holder
// killed with SIGKILL leaves a lock the next start takes over, with every acknowledged row there.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { PGlite } from '@electric-sql/pglite';
import { heavy } from '@kit/test-support/heavy';
import { LOCK_FILE } from '../src/mapper/engines/pglite/directory-lock.ts';
import { refusedHost, startHost, stopHost, writeLoad, type Host } from './embedded-processes.ts';

/** Every (writer, seq) in the directory, read by a PGlite of this process once no host runs. */
async function stored(data: string): Promise<Map<string, number[]>> {
  const direct = new PGlite(data);
  try {
    const { rows } = await direct.query<{ writer: string; seq: number }>(
      'select writer, seq from entries order by seq',
    );
    const byWriter = new Map<string, number[]>();
    for (const row of rows)
      byWriter.set(row.writer, [...(byWriter.get(row.writer) ?? []), row.seq]);
    return byWriter;
  } finally {
    await direct.close();
  }
}

heavy('several processes on one pglite: directory', () => {
  describe('several processes on one pglite: directory', () => {
    let dir: string;
    const hosts: Host[] = [];
    before(async () => {
      dir = await mkdtemp(path.join(tmpdir(), 'kit-pglite-processes-'));
    });
    after(async () => {
      for (const host of hosts) await stopHost(host, 'SIGKILL');
      await rm(dir, { recursive: true, force: true });
    });

    it("a second process is refused at start-up naming the directory and the first's pid, while the first writes under load; the first loses nothing", async () => {
      const data = path.join(dir, 'shared');
      const first = await startHost(`pglite:${data}`);
      hosts.push(first);
      let stop = false;
      const load = writeLoad(first, 'first', 4, () => stop);
      await sleep(500);
      // Two tries while the first writes: each refused, none touching the directory.
      const refusals = [];
      for (let i = 0; i < 2; i++) refusals.push(await refusedHost(`pglite:${data}`));
      await sleep(300);
      stop = true;
      const { acknowledged, refused } = await load;
      for (const refusal of refusals) {
        assert.equal(refusal.code, 1, refusal.stderr);
        assert.match(refusal.stderr, /KIT_ERR_AUTOCRUD_LOCKED/);
        assert.ok(
          refusal.stderr.includes(`pglite:${data} is in use by process ${first.pid}`),
          refusal.stderr,
        );
      }
      assert.deepEqual(refused, [], 'the first answered every write');
      assert.ok(acknowledged.length > 20, `writes acknowledged under load: ${acknowledged.length}`);
      // The first still serves, then stops cleanly (its lock removed).
      assert.equal((await fetch(`${first.base}/api/entries/1`)).status, 200);
      await stopHost(first);
      assert.equal(existsSync(path.join(data, LOCK_FILE)), false);
      const rows = await stored(data);
      assert.deepEqual(
        rows.get('first'),
        [...acknowledged].sort((a, b) => a - b),
        'every acknowledged write, nothing else',
      );
      assert.deepEqual([...rows.keys()], ['first']);
    });

    it('a holder killed with SIGKILL leaves its lock; the next start takes it over, with every acknowledged row there', async () => {
      const data = path.join(dir, 'killed');
      const doomed = await startHost(`pglite:${data}`);
      hosts.push(doomed);
      let stop = false;
      const load = writeLoad(doomed, 'doomed', 4, () => stop);
      await sleep(1500);
      stop = true;
      const { acknowledged } = await load;
      await stopHost(doomed, 'SIGKILL');
      const left = JSON.parse(readFileSync(path.join(data, LOCK_FILE), 'utf8')) as { pid: number };
      assert.equal(left.pid, doomed.pid, 'SIGKILL leaves the lock behind');
      const next = await startHost(`pglite:${data}`);
      hosts.push(next);
      assert.equal(JSON.parse(readFileSync(path.join(data, LOCK_FILE), 'utf8')).pid, next.pid);
      const page = (await (
        await fetch(`${next.base}/api/entries?filter[writer]=doomed&pageSize=1`)
      ).json()) as { total: number };
      assert.equal(page.total, acknowledged.length);
      await stopHost(next);
      assert.deepEqual(
        (await stored(data)).get('doomed'),
        [...acknowledged].sort((a, b) => a - b),
      );
    });
  });
});

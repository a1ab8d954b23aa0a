// @test-lines: once - heavy: the conformance values in several time zones, once per CI run
// The values suite (timestamps, dates, cursors over them) on every engine again, in processes
// started with TZ=Europe/Berlin (east of UTC, with summer time) and TZ=Pacific/Kiritimati (UTC+14,
// the furthest east): a date must never move a day and a timestamp never shift, whatever zone
// the service runs in. TZ is read when Node starts, so each zone is a child process.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { heavy } from '@kit/test-support/heavy';
import { typescriptArgs } from '@kit/test-support/node-args';

const runner = path.join(
  path.dirname(fileURLToPath(import.meta.url)),
  'time-zones',
  'values-in-zone.ts',
);

// Minutes JavaScript's getTimezoneOffset() gives on 2024-06-01 in each zone: proof the child ran there.
const ZONES: Array<[string, number]> = [
  ['Europe/Berlin', -120],
  ['Pacific/Kiritimati', -840],
];

function runIn(zone: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    // Without the parent runner's NODE_TEST_CONTEXT, the child is a test run of its own.
    const { NODE_TEST_CONTEXT: _parent, ...env } = process.env;
    const child = spawn(
      process.execPath,
      [...typescriptArgs, '--test', '--test-reporter=tap', runner],
      {
        env: { ...env, TZ: zone },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output }));
  });
}

heavy('AutoCrud values in other time zones', () => {
  describe('AutoCrud values in other time zones', () => {
    for (const [zone, offset] of ZONES) {
      it(`TZ=${zone}: the values suite passes on every engine, and ran in that zone`, async (t) => {
        const { code, output } = await runIn(zone);
        const count = (name: string) =>
          Number(new RegExp(`^# ${name} (\\d+)$`, 'm').exec(output)?.[1] ?? Number.NaN);
        assert.equal(count('fail'), 0, output.slice(-4000));
        assert.equal(code, 0, output.slice(-4000));
        assert.ok(count('pass') >= 14, `the suite ran: ${count('pass')} passed`);
        assert.ok(
          output.includes(`(TZ=${zone}, getTimezoneOffset ${offset})`),
          'the suite ran in the zone',
        );
        t.diagnostic(`${zone}: ${count('pass')} passed, ${count('skipped')} skipped`);
      });
    }
  });
});

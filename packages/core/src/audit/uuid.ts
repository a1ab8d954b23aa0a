import { randomFillSync } from 'node:crypto';

// Random (version 4) UUIDs for correlation ids, made 128 at a time. `crypto.randomUUID()` takes
// its bytes from a cache too, but assembles each id from 20 small strings: about 2,800 CPU
// instructions per id on Node 20 (counted with `npm run bench:instructions`), most of it string
// concatenation. Here one native call fills the random bytes of 128 ids, one loop writes them as
// text into a buffer, one native call turns the buffer into a string, and each id is a slice of
// it. The bytes come from the same CSPRNG (`randomFillSync`), so the ids are as unpredictable as
// `randomUUID()`'s; a slice keeps its 4.6 KB batch alive only while the id lives.

const PER_BATCH = 128;
const UUID_LENGTH = 36;
const random = Buffer.allocUnsafeSlow(16 * PER_BATCH);
const text = Buffer.allocUnsafeSlow(UUID_LENGTH * PER_BATCH);
// Each byte's two hex digits as one little-endian 16-bit value (the first digit in the low byte),
// written with one store: half the stores of writing the digits one by one, and no digit lookups.
const view = new DataView(text.buffer, text.byteOffset, text.byteLength);
const PAIRS = new Uint16Array(256);
const HEX = '0123456789abcdef';
for (let b = 0; b < 256; b++) PAIRS[b] = HEX.charCodeAt(b >> 4) | (HEX.charCodeAt(b & 15) << 8);
const DASH = 0x2d;

let batch = '';
let next = PER_BATCH;

// The loop is a function of its own: when it shared a function with the `toString` call after it,
// V8 compiled the loop on stack (OSR) before that call had run once, so every compiled version
// left the loop into code without type feedback and was thrown away again (`--trace-deopt`:
// "Insufficient type feedback for generic named access" on every refill); the ids cost 900
// instructions each in the interpreter instead of about 100.
function encode(): number {
  let out = 0;
  for (let id = 0; id < PER_BATCH; id++) {
    const r = id * 16;
    // RFC 9562: version 4 in the high nibble of byte 6, variant 10 in the top bits of byte 8.
    random[r + 6] = ((random[r + 6] as number) & 0x0f) | 0x40;
    random[r + 8] = ((random[r + 8] as number) & 0x3f) | 0x80;
    for (let j = 0; j < 16; j++) {
      if (j === 4 || j === 6 || j === 8 || j === 10) text[out++] = DASH;
      view.setUint16(out, PAIRS[random[r + j] as number] as number, true);
      out += 2;
    }
  }
  return out;
}

function refill(): void {
  randomFillSync(random);
  batch = text.toString('latin1', 0, encode());
  next = 0;
}

/**
 * A new random UUID (version 4, lower-case, `xxxxxxxx-xxxx-4xxx-[89ab]xxx-xxxxxxxxxxxx`), like
 * `crypto.randomUUID()`, at a fraction of its cost per call.
 */
export function newUuid(): string {
  if (next === PER_BATCH) refill();
  const start = next++ * UUID_LENGTH;
  return batch.slice(start, start + UUID_LENGTH);
}

import type { AuditRecord } from './record.js';

/** A fixed ring of records: push and take never allocate, and it never grows past its capacity. */
export class RecordRing {
  readonly #slots: Array<AuditRecord | undefined>;
  #head = 0;
  size = 0;

  constructor(readonly capacity: number) {
    this.#slots = new Array<AuditRecord | undefined>(capacity).fill(undefined);
  }

  push(record: AuditRecord): boolean {
    if (this.size === this.capacity) return false;
    this.#slots[(this.#head + this.size) % this.capacity] = record;
    this.size++;
    return true;
  }

  take(count: number): AuditRecord[] {
    const n = Math.min(count, this.size);
    const out = new Array<AuditRecord>(n);
    for (let i = 0; i < n; i++) {
      out[i] = this.#slots[this.#head] as AuditRecord;
      this.#slots[this.#head] = undefined;
      this.#head = (this.#head + 1) % this.capacity;
    }
    this.size -= n;
    return out;
  }
}

// The bound on each delivery (`deliveryTimeoutMs`), shared by the deliveries that start close
// together: one timer and one AbortSignal per window of starts, not an AbortSignal.timeout and an
// AbortSignal.any per delivery (a timer, a listener, weak references, and a DOMException when the
// timer fires after the delivery is long done: a quarter of the dispatcher's CPU per record,
// measured in bench/crud/outbox-dispatch.ts). A delivery gets at least `timeoutMs`, at most one
// window more. A stop aborts every deadline still open at once.

/** The signal a group of deliveries shares, and the race that fails them when it aborts. */
interface Deadline {
  readonly signal: AbortSignal;
  /** The delivery, or the deadline's reason once it expires or the dispatcher stops. */
  race<T>(work: Promise<T>): Promise<T>;
  /** The delivery started under this deadline is over. */
  release(): void;
}

class Window implements Deadline {
  readonly #controller = new AbortController();
  readonly #expired: Promise<never>;
  #reject!: (reason: Error) => void;
  #timer: NodeJS.Timeout | undefined;
  #inFlight = 0;
  open = true;

  constructor(
    readonly opened: number,
    ms: number,
    private readonly timeoutMs: number,
    private readonly done: (window: Window) => void,
  ) {
    this.#expired = new Promise<never>((_, reject) => {
      this.#reject = reject;
    });
    // Nobody may be racing it when it expires.
    this.#expired.catch(() => undefined);
    this.#timer = setTimeout(
      () =>
        this.abort(
          new Error(`the delivery took longer than deliveryTimeoutMs (${this.timeoutMs} ms)`),
        ),
      ms,
    );
    this.#timer.unref();
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  enter(): this {
    this.#inFlight += 1;
    return this;
  }

  race<T>(work: Promise<T>): Promise<T> {
    return this.#controller.signal.aborted
      ? Promise.reject(this.#controller.signal.reason as Error)
      : Promise.race([work, this.#expired]);
  }

  release(): void {
    this.#inFlight -= 1;
    this.settle();
  }

  /** Closed to new deliveries; its timer goes once none is in flight. */
  close(): void {
    this.open = false;
    this.settle();
  }

  settle(): void {
    if (this.open || this.#inFlight > 0 || this.#timer === undefined) return;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.done(this);
  }

  abort(reason: Error): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.open = false;
    this.#controller.abort(reason);
    this.#reject(reason);
    this.done(this);
  }
}

/** Hands out deadlines: one per `windowMs` of starts. */
export class Deadlines {
  readonly #live = new Set<Window>();
  #current: Window | undefined;
  readonly #windowMs: number;
  #stopped: Error | undefined;

  constructor(private readonly timeoutMs: number) {
    this.#windowMs = Math.max(1, Math.min(100, Math.floor(timeoutMs / 50)));
  }

  /** The deadline of a delivery starting now; call its `release()` when the delivery is over. */
  enter(): Deadline {
    const now = Date.now();
    let window = this.#current;
    if (window === undefined || !window.open || now - window.opened >= this.#windowMs) {
      window?.close();
      window = new Window(now, this.timeoutMs + this.#windowMs, this.timeoutMs, (w) =>
        this.#live.delete(w),
      );
      this.#live.add(window);
      this.#current = window;
      if (this.#stopped) window.abort(this.#stopped);
    }
    return window.enter();
  }

  /** The batch is over: the next delivery starts a new window, and this one's timer goes once its deliveries are. */
  closeCurrent(): void {
    this.#current?.close();
    this.#current = undefined;
  }

  /** Aborts every open deadline, and those made from now on, with `reason`. */
  abortAll(reason: Error): void {
    this.#stopped = reason;
    for (const window of [...this.#live]) window.abort(reason);
  }
}

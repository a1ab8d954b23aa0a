// Reading a callgrind dump of a benchmark server: the instructions each function executed itself
// ("self" cost), with the JIT-compiled JavaScript named through the perf map Node writes with
// `--perf-basic-prof`, and every function put into one item of the accounting (the route,
// Fastify, Node's HTTP path, Kit's audit, JSON, strings, the garbage collector...). Self costs add
// up to the whole, so the difference between two servers splits into items exactly.
import { readFile } from 'node:fs/promises';

/** One code object of the perf map: `[start, size, name]`. */
type PerfEntry = readonly [number, number, string];

/** Self instructions per function name (JavaScript functions by name and source position). */
export interface FunctionCosts {
  readonly total: number;
  readonly self: ReadonlyMap<string, number>;
}

async function readPerfMap(file: string): Promise<PerfEntry[]> {
  const entries: PerfEntry[] = [];
  for (const line of (await readFile(file, 'utf8')).split('\n')) {
    const m = /^([0-9a-f]+) ([0-9a-f]+) (.*)$/.exec(line);
    if (m)
      entries.push([parseInt(m[1] as string, 16), parseInt(m[2] as string, 16), m[3] as string]);
  }
  // Stable: a later code object at the same address (code space reused) comes after the earlier one.
  return entries.sort((a, b) => a[0] - b[0]);
}

function lookup(map: readonly PerfEntry[], address: number): string | undefined {
  let lo = 0;
  let hi = map.length - 1;
  let best = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if ((map[mid] as PerfEntry)[0] <= address) {
      best = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  for (let i = best; i >= 0 && i > best - 64; i--) {
    const [start, size, name] = map[i] as PerfEntry;
    if (address < start + size) return name;
  }
  return undefined;
}

/**
 * Self cost per function of a dump written with `--dump-instr=no --dump-line=no
 * --compress-strings=no`. Unnamed code (`fn=0x...` in an unnamed object) is looked up in the perf
 * map; the tier marks (`*` optimised, `~` interpreted, `^` baseline, `+` maglev) are dropped, so a
 * function is one row whatever tier ran it.
 */
export async function readCallgrind(dump: string, perfMap?: string): Promise<FunctionCosts> {
  const map = perfMap === undefined ? [] : await readPerfMap(perfMap);
  const raw = new Map<string, number>();
  let object = '';
  let fn = '';
  let afterCalls = false;
  for (const line of (await readFile(dump, 'utf8')).split('\n')) {
    const c = line.charCodeAt(0);
    if (c >= 48 && c <= 57) {
      // A cost line: inclusive cost of the call above it, or self cost of the current function.
      if (afterCalls) {
        afterCalls = false;
        continue;
      }
      const cost = Number(line.slice(line.indexOf(' ') + 1));
      const key = `${object}\t${fn}`;
      raw.set(key, (raw.get(key) ?? 0) + cost);
    } else if (line.startsWith('ob=')) object = line.slice(3);
    else if (line.startsWith('fn=')) fn = line.slice(3);
    else if (line.startsWith('calls=')) afterCalls = true;
  }
  const self = new Map<string, number>();
  let total = 0;
  for (const [key, cost] of raw) {
    const [object, fn] = key.split('\t') as [string, string];
    let name: string;
    if (fn.startsWith('0x') && (object === '???' || object === '')) {
      const found = lookup(map, parseInt(fn, 16));
      name =
        found === undefined
          ? '(unnamed JIT code)'
          : found.replace(/^(JS|LazyCompile|Function):[*~^+]?/, 'JS:');
    } else {
      name = `${object.slice(object.lastIndexOf('/') + 1)}:${fn}`;
    }
    self.set(name, (self.get(name) ?? 0) + cost);
    total += cost;
  }
  return { total, self };
}

/** The items of the accounting, in the order they are shown. */
export const ITEMS = [
  'route handler (bench/server.ts)',
  'Fastify, find-my-way',
  "Kit's audit JS",
  "Kit's other JS",
  'pino, sonic-boom (JS)',
  "Node's HTTP JS (_http_*)",
  "Node's events, streams, net, timers (JS)",
  'async hooks, AsyncLocalStorage (JS and native)',
  "Node's other JS",
  'JSON (builtins and runtime)',
  'strings and regexps (builtins and runtime)',
  'promises and microtasks',
  'property access (inline caches)',
  'calls, interpreter, deoptimisation',
  'other V8 builtins',
  'other V8 runtime',
  'HTTP parser (llhttp)',
  'crypto (randomUUID)',
  'libuv, I/O wrappers, fs',
  'other Node native',
  'malloc, memcpy, libc',
  'write barrier and garbage collector',
  'JIT compilation',
  'measurement (perf map, GC profiler)',
  'unnamed JIT code',
] as const;
export type Item = (typeof ITEMS)[number];

const GC =
  /Heap|Scaveng|MarkCompact|Marking|Sweep|Evacuat|RememberedSet|SlotSet|MemoryChunk|IterateObjectCache|RootVisitor|RootScavenge|ObjectVisitor|BodyDescriptor|MemoryAllocator|PagedSpace|NewSpace|SemiSpace|GlobalHandles|Worklist|LargeObjectSpace|FreeList|Safepoint|GCTracer|cppgc|RecordMigrated|MinorMC|Ephemeron|RecordWrite|AllocationObserver|ObjectStats|PretenuringHandler|ArrayBufferSweeper|EmbedderStack/;
const COMPILE =
  /v8::internal::(compiler|maglev|baseline|interpreter|wasm)::|v8::internal::(Parser|Scanner|Compiler|PreParser|AstValueFactory|DeclarationScope|Scope|Zone|ZoneList|OptimizingCompileDispatcher|CodeAssembler|Assembler|MacroAssembler|TurboAssembler|RegExpCompiler|RegExpParser|RegExpBytecode|SourcePosition|Deoptimizer|FeedbackVector|FeedbackNexus|CompilationCache|Factory::NewCode|CodeDesc|RelocIterator|BytecodeArray|SharedFunctionInfo|ScopeInfo|Builtins::|TieringManager)/;

// Writing the perf map (`--perf-basic-prof`, one line per compiled function) and the GC profiler's
// per-collection statistics (bench/gc-stats.ts): the measurement, not the server.
const MEASUREMENT =
  /vfprintf|_IO_|fwrite|fflush|ostream|streambuf|JSONWriter|SetHeapStatistics|GCProfiler|PerfBasicLogger|LinuxPerf|CodeEventLogger|num_put|vsnprintf|printf_fp|__mpn_|hack_digit/;

/** The item a function belongs to. */
export function itemOf(name: string): Item {
  if (name === '(unnamed JIT code)') return 'unnamed JIT code';
  if (name.startsWith('JS:') || name.startsWith('Script:')) {
    if (/\/bench\/server\.ts/.test(name)) return 'route handler (bench/server.ts)';
    if (/\/core\/(src|dist)\/audit\//.test(name)) return "Kit's audit JS";
    if (/\/core\/(src|dist)\//.test(name)) return "Kit's other JS";
    if (
      /\/node_modules\/(fastify|find-my-way|light-my-request|avvio|@fastify|fast-json-stringify|toad-cache|fast-decode-uri-component|ret|safe-regex2)\//.test(
        name,
      )
    )
      return 'Fastify, find-my-way';
    if (
      /\/node_modules\/(pino|sonic-boom|pino-http|pino-std-serializers|thread-stream|on-exit-leak-free|quick-format-unescaped|fast-redact|atomic-sleep)\//.test(
        name,
      )
    )
      return 'pino, sonic-boom (JS)';
    if (
      /node:(internal\/)?async_hooks|async_local_storage|node:internal\/async_context_frame/.test(
        name,
      )
    )
      return 'async hooks, AsyncLocalStorage (JS and native)';
    if (/node:_http_|node:http\b/.test(name)) return "Node's HTTP JS (_http_*)";
    if (
      /node:(events|net|stream|internal\/streams|internal\/process\/task_queues|timers|internal\/timers|internal\/stream_base_commons|internal\/fixed_queue)/.test(
        name,
      )
    )
      return "Node's events, streams, net, timers (JS)";
    return "Node's other JS";
  }
  // Builtins of the embedded blob (named in the binary) and the ones the perf map names.
  const builtin = /^(node:Builtins_|JS:Builtin:|Builtin:)/.test(name) || /:Builtins_/.test(name);
  if (builtin) {
    if (/RecordWrite|EphemeronKeyBarrier/.test(name)) return 'write barrier and garbage collector';
    if (/Json/i.test(name)) return 'JSON (builtins and runtime)';
    if (
      /String|RegExp|Flatten|CharCode|SubString|StringAdd|ToLowerCase|NumberToString|StringIndexOf/.test(
        name,
      )
    )
      return 'strings and regexps (builtins and runtime)';
    if (/Promise|Async|Microtask|Await|Resolve|Reject|Fulfill/.test(name))
      return 'promises and microtasks';
    if (
      /IC|Megamorphic|Load|Store|Keyed|DefineKeyed|HasProperty|GetProperty|SetProperty|FindOrderedHash|CloneObject|ForIn|ObjectKeys|CreateDataProperty|OrdinaryHasInstance|InstanceOf/.test(
        name,
      )
    )
      return 'property access (inline caches)';
    if (
      /Call|Construct|Trampoline|Interpreter|Baseline|Bytecode|JSEntry|CEntry|Deoptimization|Adaptor|Bailout|OnStackReplacement|Tiering|CompileLazy|InstantiateAsmJs|ReturnReceiver/.test(
        name,
      )
    )
      return 'calls, interpreter, deoptimisation';
    return 'other V8 builtins';
  }
  if (MEASUREMENT.test(name)) return 'measurement (perf map, GC profiler)';
  if (GC.test(name)) return 'write barrier and garbage collector';
  if (COMPILE.test(name)) return 'JIT compilation';
  if (/PromiseHook|AsyncWrap|async_hooks|AsyncHooks|AsyncResource|AsyncContext/.test(name))
    return 'async hooks, AsyncLocalStorage (JS and native)';
  if (/Json/.test(name)) return 'JSON (builtins and runtime)';
  if (
    /v8::internal::.*(String|RegExp|Flatten|Utf8|Unibrow|CharPredicates|Intl)|String::Write|String::NewFrom|String::Utf8Length|Runtime_String|Runtime_RegExp/.test(
      name,
    )
  )
    return 'strings and regexps (builtins and runtime)';
  if (/Promise|Microtask/.test(name)) return 'promises and microtasks';
  if (/llhttp|http_parser|node::http|Parser::/.test(name)) return 'HTTP parser (llhttp)';
  if (
    /crypto|RAND_|ossl_|EVP_|CRYPTO_|OPENSSL|sha\d|SHA\d|aes|chacha|drbg|RandomUUID|BN_/i.test(
      name,
    ) &&
    !/v8::/.test(name)
  )
    return 'crypto (randomUUID)';
  if (
    /(^|:)uv_|uv__|StreamBase|LibuvStreamWrap|TCPWrap|WriteWrap|StreamReq|node::fs|FSReqCallback|node::Buffer|ConnectionWrap|HandleWrap|ReqWrap|ThreadPoolWork/.test(
      name,
    )
  )
    return 'libuv, I/O wrappers, fs';
  if (/^node:(v8::|v8::internal::)/.test(name)) return 'other V8 runtime';
  if (/^node:/.test(name)) return 'other Node native';
  return 'malloc, memcpy, libc';
}

/** Instructions per request of each item. */
export function itemsOf(costs: FunctionCosts, requests: number): Map<Item, number> {
  const out = new Map<Item, number>(ITEMS.map((i) => [i, 0]));
  for (const [name, cost] of costs.self) {
    const item = itemOf(name);
    out.set(item, (out.get(item) ?? 0) + cost / requests);
  }
  return out;
}

/** Per-request self cost of each function. */
export function perRequest(costs: FunctionCosts, requests: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const [name, cost] of costs.self) out.set(name, cost / requests);
  return out;
}
